// The CodeMirror 6 API that static/js uses, bundled into one ES module (static/vendor/codemirror.js).
export { basicSetup } from "codemirror";
export { EditorView, Decoration, keymap } from "@codemirror/view";
export { EditorState, Compartment, Prec, StateEffect, StateField } from "@codemirror/state";
export { python } from "@codemirror/lang-python";
export { cpp } from "@codemirror/lang-cpp";
export { json } from "@codemirror/lang-json";
export { oneDark } from "@codemirror/theme-one-dark";
export { lintGutter, setDiagnostics } from "@codemirror/lint";
