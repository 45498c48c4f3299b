// Graph view of one graph stage. The server lays out what is shown (Graphviz dot with nested
// module boxes and routed edges, or a fast layered layout for big graphs); graphcanvas.js draws
// it. Module groups come collapsed as Model Explorer shows them: click a group to open it, click
// an open group's title to close it. Search finds nodes by name, op or target, inside closed
// groups too (they open). Colours: by op, by the kernel a node fused into, or by its kernel's
// share of the measured kernel time. Clicking a node shows its user line and selects it: every
// graph view of the same compile marks what the node became or came from (Dynamo -> AOT ->
// post-grad, and back; links from PyTorch's provenance, `parsers/nodelinks.py`); its first kernel
// opens in the Kernels stage of the next pane unless another graph is open, and each of its
// kernels from the view's note. Clicking a kernel in the legend selects
// the nodes it came from. `]` / `[` step through the marked nodes, Escape clears the selection.

import { api } from "./api.js";
import { h, clear } from "./dom.js";
import { GraphCanvas } from "./graphcanvas.js";
import { stageLabel } from "./stages.js";

const OP_COLORS = {
  placeholder: "#2f9e44", call_function: "#1c7ed6", call_method: "#7048e8",
  call_module: "#e8590c", get_attr: "#868e96", output: "#e03131", module: "#f08c00",
};
const KERNEL_COLORS = ["#1c7ed6", "#e8590c", "#2f9e44", "#ae3ec9", "#f59f00", "#0c8599",
                       "#e03131", "#5c940d", "#7048e8", "#c2255c", "#1098ad", "#d9480f"];
const NO_KERNEL = "#adb5bd";
const COLOR_MODES = [["op", "colour: op"], ["kernel", "colour: kernel"], ["time", "colour: kernel time"]];

function shareOf(node, kernels) {
  const shares = (node.kernels ?? []).map((k) => kernels[k]?.share).filter((s) => s != null);
  return shares.length ? shares.reduce((a, b) => a + b, 0) : null;
}

function tint(hex, alpha) {
  const v = parseInt(hex.slice(1), 16);
  return `rgba(${v >> 16},${(v >> 8) & 255},${v & 255},${alpha})`;
}

function colorFor(mode, graph, dark) {
  const maxShare = Math.max(0, ...graph.nodes.map((n) => shareOf(n, graph.kernels) ?? 0)) || 1;
  return (node) => {
    let base;
    if (mode === "kernel") {
      base = node.kernels?.length ? KERNEL_COLORS[node.kernels[0] % KERNEL_COLORS.length] : NO_KERNEL;
    } else if (mode === "time") {
      const share = shareOf(node, graph.kernels);
      if (share == null) return { fill: tint(NO_KERNEL, 0.15), stroke: NO_KERNEL };
      return { fill: tint("#e03131", 0.12 + 0.78 * (share / maxShare)), stroke: "#c92a2a" };
    } else {
      base = OP_COLORS[node.op] ?? "#1c7ed6";
    }
    return { fill: tint(base, dark ? 0.3 : 0.16), stroke: base };
  };
}

function percent(share) {
  return `${(100 * share).toFixed(share < 0.01 ? 2 : 1)} %`;
}

function describe(node, graph) {
  const kernels = (node.kernels ?? []).map((k) => graph.kernels[k]);
  return [
    node.name,
    node.kind === "group" ? `module ${node.module} · ${node.target} (click to open)` : `op: ${node.op}`,
    node.kind === "node" ? `target: ${node.target}` : null,
    node.shape ? `shape: [${node.shape.join(", ")}]` : null,
    node.dtype ? `dtype: ${node.dtype}` : null,
    node.line ? `source line: ${node.line}` : null,
    node.kind === "node" && node.module ? `module: ${node.module}` : null,
    ...kernels.slice(0, 6).map((k) => `kernel ${k.name}` +
      (k.us != null ? ` · ${k.us.toFixed(1)} us, ${percent(k.share)} of kernel time` : "")),
    kernels.length > 6 ? `... ${kernels.length - 6} more kernels` : null,
  ].filter(Boolean);
}

function legend(mode, graph, onKernel) {
  if (mode === "op") return [];
  if (mode === "time") {
    return [h("span", { class: "muted" },
      graph.kernels.some((k) => k.share != null)
        ? "darker = the node's kernel takes a larger share of the measured kernel time"
        : "no kernel timings in this result (run with timings on)")];
  }
  return graph.kernels.map((kernel, i) => h("button", {
    class: "graph-kernel", title: `mark the nodes ${kernel.name} came from, in every graph`,
    onclick: () => onKernel(i) },
  h("i", { style: `background:${KERNEL_COLORS[i % KERNEL_COLORS.length]}` }), kernel.name));
}

// The selection shared by the graph views of one compile: a node or a kernel. A view drawn later
// (another pane, or the next tab) shows it too.
const views = new Set();
let selection = null; // {key, compileId, stage, node} or {key, compileId, stage, kernel: label}

// A kernel as the stages name it (`kernel_src` keys): "NAME", or "NAME (backward)".
const kernelLabel = (kernel) => (kernel.graph === "backward" ? `${kernel.name} (backward)` : kernel.name);

function select(chosen) {
  selection = chosen;
  for (const view of views) {
    if (view.container.graphView !== view || !view.canvas.el.isConnected) views.delete(view);
    else view.showSelection(true);
  }
}

const hasAny = (list, set) => (list ?? []).some((v) => set.has(v));

// A kernel chosen outside the graphs (a line of the Kernels stage or of its lowering, `label`
// from its `kernel_src` key): the graph views of that compile mark the nodes it came from.
export function selectKernel(key, compileId, label) {
  select({ key, compileId, kernel: label });
}

// The nodes of a graph of `stage` (shown or inside closed groups) that the selected node is,
// became or came from, and how they were found. `post`: the post-grad nodes a node is (AOT and
// post-grad nodes) or became (a Dynamo node); `dynamo`: the Dynamo nodes it came from.
function counterparts(chosen, stage, nodes, kernels) {
  if (chosen.kernel != null) {
    const index = kernels.findIndex((k) => kernelLabel(k) === chosen.kernel);
    return { found: index < 0 ? [] : nodes.filter((n) => n.kernels?.includes(index)), how: "kernel" };
  }
  const source = chosen.node;
  if (stage === "dynamo_graph") return { found: nodes.filter((n) => source.dynamo?.includes(n.name)), how: "origin" };
  if (chosen.stage === "dynamo_graph") return { found: nodes.filter((n) => n.dynamo?.includes(source.name)), how: "became" };
  const post = new Set(source.post), dynamo = new Set(source.dynamo);
  const same = nodes.filter((n) => hasAny(n.post, post));
  if (same.length) return { found: same, how: "same" };
  return { found: nodes.filter((n) => hasAny(n.dynamo, dynamo)), how: "dynamo" };
}

// What the marked nodes are to the selection: `here` counts them ("2 nodes here").
function relation(how, what, here, count) {
  return {
    kernel: `${here} went into ${what}`, origin: `${what} came from ${here}`, became: `${here} came from ${what}`,
    same: `${here} ${count === 1 ? "is" : "are"} ${what}`,
    dynamo: `${here} came from the same Dynamo node as ${what} (not the same node: it is not in this graph)`,
  }[how];
}

// " (forward 1, backward 4)" where the nodes are in several graphs (AOT and post-grad nodes'
// `post` keys name theirs).
function bySection(nodes) {
  const counts = new Map();
  for (const n of nodes) {
    const section = n.post?.[0]?.split(":")[0] ?? "";
    counts.set(section, (counts.get(section) ?? 0) + 1);
  }
  return counts.size > 1 ? ` (${[...counts].map(([s, c]) => `${s} ${c}`).join(", ")})` : "";
}

// Why a selected node has no counterpart in a graph of `stage`.
function absence(chosen, stage, kernelName) {
  if (chosen.kernel != null) return `no node of this graph went into ${kernelName}`;
  const { node } = chosen;
  if (chosen.stage === "dynamo_graph") {
    return node.post?.length ? `${node.name} has no counterpart in this graph (its nodes are in the other AOT graph)`
      : `PyTorch's provenance links no later node to ${node.name} (an input, or work folded away)`;
  }
  if (stage === "dynamo_graph" || !node.dynamo?.length) {
    return `PyTorch recorded no Dynamo node for ${node.name} (a node a pass made, or an input)`;
  }
  if (stage === "post_grad_graph" && !node.post?.length) return `Inductor's post-grad passes removed or replaced ${node.name}`;
  return `no node of this graph is ${node.name} or came from Dynamo's ${node.dynamo.join(", ")}`;
}

// `collapse` is "auto", "off" or a module depth; `onCollapse(value)` asks for another one.
// `onKernel(name)` opens a kernel in the Kernels stage.
export function renderGraph(container, { key, compileId, stage, collapse, dark, onUserLine, onCollapse, onKernel }) {
  const view = new GraphView(container, { key, compileId, stage, collapse, dark, onUserLine, onCollapse, onKernel });
  view.load(null);
  return view;
}

class GraphView {
  constructor(container, options) {
    Object.assign(this, options);
    this.container = container;
    this.mode = "op";
    this.search = h("input", { type: "search", placeholder: "Find node: name, op, target",
                               class: "graph-search", "aria-label": "Find node by name, op or target" });
    this.count = h("span", { class: "muted graph-count" });
    this.collapseSelect = h("select", { class: "graph-collapse", "aria-label": "Collapse by module",
                                        onchange: () => this.onCollapse(this.collapseSelect.value) });
    this.modeSelect = h("select", { class: "graph-color", "aria-label": "Colour nodes by",
                                    onchange: () => this.setMode(this.modeSelect.value) },
      COLOR_MODES.map(([value, label]) => h("option", { value }, label)));
    this.info = h("span", { class: "muted graph-info" }, "Laying out ...");
    const fit = h("button", { class: "graph-fit", title: "Show the whole graph",
                              onclick: () => this.canvas.fit(true) }, "Fit");
    this.legend = h("div", { class: "graph-legend" });
    this.note = h("div", { class: "graph-sync", hidden: true, "aria-live": "polite" });
    clear(container, h("div", { class: "graph-bar" }, this.search, this.count, this.collapseSelect,
                       this.modeSelect, fit, this.info), this.legend, this.note);
    this.canvas = new GraphCanvas(container, {
      dark: this.dark, describe: (n) => describe(n, this.graph),
      onClick: (n) => this.click(n), onTitle: (box) => this.toggle(box.id, false),
    });
    container.graphView = this; // tests and the benchmark find nodes on screen through it
    this.wireSearch();
    this.canvas.canvas.addEventListener("keydown", (event) => this.keyDown(event));
    views.add(this);
  }

  // Fetch the view with `expanded` groups open (null: as `collapse` says); then focus `focusId`.
  async load(expanded, focusId = null) {
    const started = performance.now();
    let graph;
    try {
      graph = await api.graph(this.key, this.compileId, this.stage, this.collapse, expanded);
    } catch (error) {
      clear(this.info, `Graph unavailable: ${error.message}`);
      return;
    }
    if (!this.container.isConnected) return; // the pane moved on while we waited
    const fetched = performance.now();
    const opening = !this.graph; // the view opens fitted to its pane; a group opened later, readable
    this.graph = graph;
    this.expanded = new Set(graph.expanded);
    this.renderBar();
    this.runSearch(false);
    this.canvas.setGraph(graph, colorFor(this.mode, graph, this.dark), opening);
    this.showSelection(false);
    const node = focusId && graph.nodes.find((n) => n.id === focusId);
    if (node) {
      this.current = this.found.findIndex((n) => n.id === focusId);
      if (this.current >= 0) clear(this.count, `${this.current + 1} of ${this.found.length}`);
      this.canvas.focus(node);
    }
    this.container.dataset.ready = "1";
    window.__tbGraph = { nodes: graph.nodes.length, engine: graph.engine, fetch_ms: fetched - started, started,
                         plot_ms: performance.now() - fetched, total_ms: performance.now() - started };
  }

  renderBar() {
    const g = this.graph;
    clear(this.collapseSelect, ["auto", "off", ...Array.from({ length: g.module_depth }, (_, i) => String(i + 1))]
      .map((v) => h("option", { value: v, selected: v === String(this.collapse) },
        v === "auto" ? "modules: auto" : v === "off" ? "modules: all open" : `modules: open above level ${v}`)));
    const groups = g.nodes.filter((n) => n.kind === "group").length;
    clear(this.info, `${g.total_nodes.toLocaleString()} nodes` +
      (groups ? ` · ${groups} closed module group${groups === 1 ? "" : "s"}` : "") +
      ` · ${g.edges.length.toLocaleString()} edges · layout: ${g.engine}`);
    clear(this.legend, legend(this.mode, g, (i) => this.selectKernel(i)));
  }

  setMode(mode) {
    this.mode = mode;
    this.canvas.setColors(colorFor(mode, this.graph, this.dark));
    clear(this.legend, legend(mode, this.graph, (i) => this.selectKernel(i)));
  }

  toggle(groupId, open) {
    const expanded = new Set(this.expanded);
    if (open) expanded.add(groupId);
    else expanded.delete(groupId);
    this.load([...expanded]);
  }

  click(node) {
    if (node.kind === "group") {
      this.toggle(node.id, true);
      return;
    }
    select({ key: this.key, compileId: this.compileId, stage: this.stage, node });
    if (node.line) this.onUserLine(node.line);
    this.canvas.canvas.focus({ preventScroll: true }); // the editor took it: keep ] [ Escape here
    // Its kernel opens in the next pane, unless another graph of this compile is in step there.
    if (node.kernels?.length && ![...views].some((v) => v !== this && v.key === this.key && v.compileId === this.compileId)) {
      this.onKernel(this.graph.kernels[node.kernels[0]].name);
    }
  }

  selectKernel(index) {
    select({ key: this.key, compileId: this.compileId, stage: this.stage, kernel: kernelLabel(this.graph.kernels[index]) });
  }

  // Mark the selection's counterparts here (the selected node itself in its own view); `moved`:
  // it was just made, so another view centres its first counterpart.
  showSelection(moved) {
    const chosen = selection;
    const mine = chosen && this.graph && chosen.key === this.key && chosen.compileId === this.compileId;
    this.linked = [];
    this.step = -1;
    this.canvas.selected = null;
    if (!mine) {
      this.canvas.linked = new Set();
      this.note.hidden = true;
      this.canvas.redraw();
      return;
    }
    const all = [...this.graph.nodes.filter((n) => n.kind === "node"), ...this.graph.hidden];
    const own = chosen.node && chosen.stage === this.stage;
    const { found, how } = own ? { found: all.filter((n) => n.id === chosen.node.id), how: "own" }
      : counterparts(chosen, this.stage, all, this.graph.kernels);
    const shown = new Map(this.graph.nodes.map((n) => [n.id, n]));
    const items = found.map((n) => shown.get(n.id) ?? shown.get(n.chain?.find((g) => shown.has(g)))).filter(Boolean);
    this.linked = [...new Set(items)];
    if (own) this.canvas.selected = this.linked[0] ?? null;
    this.canvas.linked = new Set(own ? [] : this.linked);
    this.renderNote(chosen, how, found);
    if (moved && !own && this.linked.length) this.stepLinked(1);
    else this.canvas.redraw();
  }

  renderNote(chosen, how, found) {
    const kernelName = (i) => this.graph.kernels[i]?.name ?? `kernel ${i}`;
    const what = chosen.kernel ?? `${chosen.node.name} (${stageLabel(chosen.stage)})`;
    let text;
    if (how === "own") {
      const dynamo = this.stage === "dynamo_graph" ? [] : chosen.node.dynamo ?? [];
      text = `Selected ${chosen.node.name}` + (dynamo.length ? ` · from Dynamo's ${dynamo.join(", ")}` : "") +
        " · other graphs mark its counterparts";
    } else if (!found.length) {
      const linked = [...this.graph.nodes, ...this.graph.hidden].some((n) => n.dynamo || n.post);
      text = `No counterpart of ${what}: ${linked ? absence(chosen, this.stage, what)
        : "PyTorch's provenance does not reach this graph's nodes (a view torchbolt re-traced)"}.`;
    } else {
      const here = found.length === 1 ? "1 node here" : `${found.length} nodes here`;
      text = `${relation(how, what, here, found.length)}${bySection(found)} · ] next, [ previous`;
    }
    const kernels = how === "own" ? chosen.node.kernels ?? [] : [];
    clear(this.note, h("span", {}, text), kernels.map((i) => h("button", {
      class: "graph-kernel", title: `open ${kernelName(i)} in the Kernels stage`,
      onclick: () => this.onKernel(kernelName(i)) }, `kernel ${kernelName(i)} ↗`)));
    this.note.hidden = false;
    this.note.dataset.found = String(how === "own" ? 1 : found.length);
  }

  // Centre the next (`by` 1) or previous (-1) marked node.
  stepLinked(by) {
    const marked = this.linked;
    if (!marked.length) return;
    this.step = (this.step + by + marked.length) % marked.length;
    this.canvas.focus(marked[this.step]);
  }

  keyDown(event) {
    if (event.key === "]" || event.key === "[") this.stepLinked(event.key === "]" ? 1 : -1);
    else if (event.key === "Escape") select(null);
    else return;
    event.preventDefault();
  }

  matches(query) {
    const hit = (n) => [n.name, n.op, n.target].some((v) => v && String(v).toLowerCase().includes(query));
    return [...this.graph.nodes.filter((n) => n.kind === "node" && hit(n)), ...this.graph.hidden.filter(hit)];
  }

  runSearch(redraw = true) {
    const query = this.search.value.trim().toLowerCase();
    this.found = query ? this.matches(query) : [];
    this.current = -1;
    clear(this.count, query ? `${this.found.length} match${this.found.length === 1 ? "" : "es"}` : "");
    this.canvas.marked = new Set(this.found.filter((n) => n.x != null));
    if (redraw) this.canvas.redraw();
  }

  // Show the next match; one inside closed groups opens them first.
  next() {
    if (!this.found.length) return;
    this.current = (this.current + 1) % this.found.length;
    const match = this.found[this.current];
    clear(this.count, `${this.current + 1} of ${this.found.length}`);
    if (match.chain) this.load([...this.expanded, ...match.chain], match.id);
    else this.canvas.focus(match);
  }

  wireSearch() {
    this.search.addEventListener("input", () => this.runSearch());
    this.search.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.next();
    });
  }
}
