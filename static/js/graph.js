// Graph view of one graph stage. The server lays out what is shown (Graphviz dot with nested
// module boxes and routed edges, or a fast layered layout for big graphs); graphcanvas.js draws
// it. Module groups come collapsed as Model Explorer shows them: click a group to open it, click
// an open group's title to close it. Search finds nodes by name, op or target, inside closed
// groups too (they open). Colours: by op, by the kernel a node fused into, or by its kernel's
// share of the measured kernel time. Clicking a node shows its user line and opens its kernel.

import { api } from "./api.js";
import { h, clear } from "./dom.js";
import { GraphCanvas } from "./graphcanvas.js";

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
    class: "graph-kernel", title: `open ${kernel.name} in the Kernels stage`,
    onclick: () => onKernel(kernel.name) },
  h("i", { style: `background:${KERNEL_COLORS[i % KERNEL_COLORS.length]}` }), kernel.name));
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
    clear(container, h("div", { class: "graph-bar" }, this.search, this.count, this.collapseSelect,
                       this.modeSelect, fit, this.info), this.legend);
    this.canvas = new GraphCanvas(container, {
      dark: this.dark, describe: (n) => describe(n, this.graph),
      onClick: (n) => this.click(n), onTitle: (box) => this.toggle(box.id, false),
    });
    container.graphView = this; // tests and the benchmark find nodes on screen through it
    this.wireSearch();
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
    this.graph = graph;
    this.expanded = new Set(graph.expanded);
    this.renderBar();
    this.runSearch(false);
    this.canvas.setGraph(graph, colorFor(this.mode, graph, this.dark));
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
    clear(this.legend, legend(this.mode, g, this.onKernel));
  }

  setMode(mode) {
    this.mode = mode;
    this.canvas.setColors(colorFor(mode, this.graph, this.dark));
    clear(this.legend, legend(mode, this.graph, this.onKernel));
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
    if (node.line) this.onUserLine(node.line);
    if (node.kernels?.length) this.onKernel(this.graph.kernels[node.kernels[0]].name);
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
