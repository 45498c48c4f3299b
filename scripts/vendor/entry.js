// The CodeMirror 6 API that static/js uses, bundled into one ES module (static/vendor/codemirror.js).
export { basicSetup, minimalSetup } from "codemirror";
export { EditorView, keymap, lineNumbers, gutter, GutterMarker, Decoration, ViewPlugin,
         hoverTooltip, highlightActiveLine, highlightActiveLineGutter } from "@codemirror/view";
export { EditorState, Compartment, StateField, StateEffect, RangeSetBuilder } from "@codemirror/state";
export { python } from "@codemirror/lang-python";
export { cpp } from "@codemirror/lang-cpp";
export { json } from "@codemirror/lang-json";
export { oneDark } from "@codemirror/theme-one-dark";
export { syntaxHighlighting, defaultHighlightStyle, foldGutter } from "@codemirror/language";
export { lintGutter, setDiagnostics, forEachDiagnostic } from "@codemirror/lint";
export { search, searchKeymap, openSearchPanel } from "@codemirror/search";
export { indentWithTab, defaultKeymap, history, historyKeymap } from "@codemirror/commands";
