// CodeMirror 6 views: the user's editor and the read-only stage viewers of the panes.
// Both colour lines by the user source line they come from (Compiler Explorer style), so the
// editor's line 12 and every output line made from it share a colour.

import {
  EditorView, EditorState, Compartment, StateField, StateEffect, Decoration, keymap,
  basicSetup, python, cpp, json, oneDark, lintGutter, setDiagnostics, Prec,
} from "../vendor/codemirror.js";
import { shortPaths } from "./paths.js";
import { fullNames, shortenNames } from "./names.js";

const PALETTE_SIZE = 7; // the .tb-src-N colours of app.css
// {colors: Map(line -> user line), focused: Set(line), linked: Set(line)}: document lines.
const setLineMarks = StateEffect.define();

// Line decorations: `colors` maps a document line to the user line it stands for.
const lineMarks = StateField.define({
  create: () => Decoration.none,
  update(decorations, tr) {
    for (const effect of tr.effects) {
      if (effect.is(setLineMarks)) return buildMarks(tr.state.doc, effect.value);
    }
    return decorations.map(tr.changes);
  },
  provide: (field) => EditorView.decorations.from(field),
});

function buildMarks(doc, { colors, focused, linked }) {
  const ranges = [];
  for (let n = 1; n <= doc.lines; n++) {
    const user = colors.get(n);
    const classes = [user != null ? `tb-src tb-src-${user % PALETTE_SIZE}` : "",
                     focused.has(n) ? "tb-focus" : "", linked.has(n) ? "tb-link" : ""].join(" ").trim();
    if (classes) ranges.push(Decoration.line({ class: classes }).range(doc.line(n).from));
  }
  return Decoration.set(ranges);
}

// Rows marked by kind (a diff's changed lines, a recompile's failed guard): kind -> {lines, cls}.
const setRowMarks = StateEffect.define(); // {kind, lines: Set(line), cls}
const rowMarks = StateField.define({
  create: () => ({ kinds: new Map(), decorations: Decoration.none }),
  update(value, tr) {
    let kinds = value.kinds;
    for (const effect of tr.effects) {
      if (effect.is(setRowMarks)) kinds = new Map(kinds).set(effect.value.kind, effect.value);
    }
    if (kinds === value.kinds) return value;
    const ranges = [];
    for (const { lines, cls } of kinds.values()) {
      for (const n of lines) {
        if (n >= 1 && n <= tr.state.doc.lines) ranges.push(Decoration.line({ class: cls }).range(tr.state.doc.line(n).from));
      }
    }
    return { kinds, decorations: Decoration.set(ranges, true) };
  },
  provide: (field) => EditorView.decorations.from(field, (value) => value.decorations),
});

export function markRows(view, kind, lines, cls) {
  view.dispatch({ effects: setRowMarks.of({ kind, lines, cls }) });
}

// Long paths shown short (paths.js): the folders hidden, the full path on hover.
function pathDecorations(text) {
  const ranges = [];
  for (const { from, to, hide, path } of shortPaths(text)) {
    ranges.push(Decoration.replace({}).range(from, from + hide));
    ranges.push(Decoration.mark({ class: "tb-path", attributes: { title: path } }).range(from + hide, to));
  }
  return Decoration.set(ranges, true);
}

function language(name) {
  if (name === "python") return python();
  if (name === "cpp") return cpp();
  if (name === "json") return json();
  return [];
}

const themes = new WeakMap();
function themeFor(view) { return themes.get(view); }

function baseExtensions(theme) {
  return [basicSetup, lineMarks, theme.of([]), EditorView.theme({ "&": { height: "100%" } })];
}

export function setTheme(view, dark) {
  view.dispatch({ effects: themeFor(view).reconfigure(dark ? oneDark : []) });
}

// `colors`: Map(document line -> user line); `focused`, `linked`: Sets of document lines.
export function markLines(view, colors, focused = new Set(), linked = new Set()) {
  view.dispatch({ effects: setLineMarks.of({ colors, focused, linked }) });
}

export function scrollToLine(view, line, y = "center") {
  if (line < 1 || line > view.state.doc.lines) return;
  view.dispatch({ effects: EditorView.scrollIntoView(view.state.doc.line(line).from, { y }) });
}

// Whether an edit replaced the whole text (a paste over Ctrl+A, an example loaded).
function replacedAll(update) {
  let whole = false;
  update.changes.iterChangedRanges((from, to) => {
    whole ||= from === 0 && to === update.startState.doc.length && to > 0;
  });
  return whole;
}

// The user's editor. `onRun` on Ctrl/Cmd+Enter; `onCursorLine(line)` as the cursor moves;
// `onChange(text, replacedAll)` on each edit.
export function createEditor(parent, { doc, onRun, onCursorLine, onChange }) {
  const theme = new Compartment();
  let lastLine = null;
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => { onRun(); return true; } }])),
        baseExtensions(theme),
        python(),
        lintGutter(),
        EditorView.lineWrapping,
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString(), replacedAll(update));
          const line = update.state.doc.lineAt(update.state.selection.main.head).number;
          if (line !== lastLine && (update.selectionSet || update.docChanged)) {
            lastLine = line;
            onCursorLine(line);
          }
        }),
      ],
    }),
  });
  themes.set(view, theme);
  return view;
}

export function setDoc(view, text) {
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
}

export function selectLine(view, line) {
  if (line < 1 || line > view.state.doc.lines) return;
  const { from } = view.state.doc.line(line);
  view.dispatch({ selection: { anchor: from }, effects: EditorView.scrollIntoView(from, { y: "center" }) });
  view.focus();
}

// Gutter marks with hover text: graph breaks (warning) and the script's error (error).
// `marks` is [{line, severity, title, render: () => Node}].
export function setMarks(view, marks) {
  const doc = view.state.doc;
  const diagnostics = marks.filter((m) => m.line >= 1 && m.line <= doc.lines).map((m) => {
    const line = doc.line(m.line);
    return { from: line.from, to: line.to, severity: m.severity, source: m.title,
             message: m.text, renderMessage: m.render };
  });
  view.dispatch(setDiagnostics(view.state, diagnostics));
}

// Short FX names (names.js): a hover title with the full name, and copies give full names.
function nameExtensions(spans) {
  if (!spans.length) return [];
  const marks = Decoration.set(spans.map((s) =>
    Decoration.mark({ class: "tb-name", attributes: { title: s.full } }).range(s.from, s.to)));
  return [EditorView.decorations.of(marks), EditorView.domEventHandlers({
    copy: (event, v) => {
      const { from, to } = v.state.selection.main;
      if (from === to || !event.clipboardData) return false;
      event.clipboardData.setData("text/plain", fullNames(v.state.doc.toString(), from, to, spans));
      event.preventDefault();
      return true;
    },
  })];
}

// A read-only viewer for one stage's text. `onLineClick(documentLine)`; `names` shortens FX
// names for display (see names.js); `wrap` wraps long lines (else they scroll sideways).
export function createViewer(parent, { text, lang, onLineClick, names, wrap }) {
  const theme = new Compartment();
  const shown = shortenNames(text, names);
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: shown.text,
      extensions: [
        baseExtensions(theme), language(lang), EditorState.readOnly.of(true), rowMarks,
        wrap ? EditorView.lineWrapping : [],
        EditorView.decorations.of(pathDecorations(shown.text)), nameExtensions(shown.spans),
        EditorView.domEventHandlers({
          mouseup: (event, v) => {
            const pos = v.posAtCoords({ x: event.clientX, y: event.clientY });
            if (pos != null && v.state.selection.main.empty) onLineClick(v.state.doc.lineAt(pos).number);
          },
        }),
      ],
    }),
  });
  themes.set(view, theme);
  return view;
}
