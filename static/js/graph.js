// Graph view: the server lays the graph out (Graphviz dot, or its layered fallback for big
// graphs); plotly draws it, with WebGL past a few hundred nodes. Hover shows op, target, shape,
// dtype, source line and module; search highlights and zooms to nodes; a click on a node shows
// its source line in the editor. Big graphs come collapsed by module (the select changes that).

import { api, assetUrl } from "./api.js";
import { h, clear, escapeHtml } from "./dom.js";

const WEBGL_OVER = 400;
const LABELS_UP_TO = 120;
const OP_COLORS = {
  placeholder: "#2f9e44", call_function: "#1c7ed6", call_method: "#7048e8",
  call_module: "#e8590c", get_attr: "#868e96", output: "#e03131", module: "#f08c00",
};
const LABEL_CHARS = 18;
let plotly = null;

export function loadPlotly() {
  plotly ??= new Promise((resolve, reject) => {
    const script = h("script", { src: assetUrl("vendor/plotly.min.js") });
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => reject(new Error("could not load plotly.js"));
    document.head.append(script);
  });
  return plotly;
}

function hoverText(node) {
  const rows = [
    `<b>${escapeHtml(node.name)}</b>`,
    `op: ${escapeHtml(node.op)}`,
    `target: ${escapeHtml(node.target)}`,
    node.shape ? `shape: [${escapeHtml(node.shape.join(", "))}]` : null,
    node.dtype ? `dtype: ${escapeHtml(node.dtype)}` : null,
    node.line ? `source line: ${node.line}` : null,
    node.module ? `module: ${escapeHtml(node.module)}` : null,
    node.size > 1 ? `${node.size} nodes collapsed (pick "off" to expand)` : null,
  ];
  return rows.filter(Boolean).join("<br>");
}

function shortLabel(name) {
  return escapeHtml(name.length > LABEL_CHARS ? `${name.slice(0, LABEL_CHARS - 1)}…` : name);
}

function traces(graph, dark) {
  const gl = graph.nodes.length > WEBGL_OVER;
  const type = gl ? "scattergl" : "scatter";
  const ex = [], ey = [];
  for (const [a, b] of graph.edges) {
    const p = graph.nodes[a], q = graph.nodes[b];
    ex.push(p.x, q.x, null);
    ey.push(p.y, q.y, null);
  }
  const out = [{ type, mode: "lines", x: ex, y: ey, hoverinfo: "skip", showlegend: false,
                 line: { width: 1, color: dark ? "#5c6370" : "#adb5bd" } }];
  const byOp = new Map();
  graph.nodes.forEach((node, i) => {
    if (!byOp.has(node.op)) byOp.set(node.op, []);
    byOp.get(node.op).push(i);
  });
  const labels = graph.nodes.length <= LABELS_UP_TO;
  for (const [op, indices] of byOp) {
    out.push({
      type, name: op, mode: labels ? "markers+text" : "markers",
      x: indices.map((i) => graph.nodes[i].x), y: indices.map((i) => graph.nodes[i].y),
      customdata: indices, hovertext: indices.map((i) => hoverText(graph.nodes[i])),
      hoverinfo: "text", text: labels ? indices.map((i) => shortLabel(graph.nodes[i].name)) : undefined,
      textposition: "middle right", textfont: { size: 11 },
      marker: { color: OP_COLORS[op] ?? "#1c7ed6", symbol: "square",
                size: indices.map((i) => Math.min(22, 9 + 2 * Math.log2(graph.nodes[i].size))),
                line: { width: 0 } },
    });
  }
  out.push({ type, name: "match", mode: "markers", x: [], y: [], hoverinfo: "skip",
             marker: { size: 20, color: "rgba(0,0,0,0)", line: { width: 3, color: "#fab005" } } });
  return out;
}

function layoutFor(dark) {
  const fg = dark ? "#d7dae0" : "#212529";
  return {
    margin: { l: 8, r: 8, t: 8, b: 8 }, dragmode: "pan", hovermode: "closest",
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: fg },
    showlegend: true, legend: { orientation: "h", x: 0, y: 1, bgcolor: "rgba(0,0,0,0)" },
    xaxis: { visible: false }, yaxis: { visible: false, scaleanchor: "x" },
    hoverlabel: { align: "left" },
  };
}

// `collapse` is "auto", "off" or a module depth; `onCollapse(value)` asks for another one.
export async function renderGraph(container, { key, compileId, stage, collapse, dark, onUserLine, onCollapse }) {
  const started = performance.now();
  const search = h("input", { type: "search", placeholder: "Find node by name", class: "graph-search",
                              "aria-label": "Find node by name" });
  const count = h("span", { class: "muted graph-count" });
  const collapseSelect = h("select", { class: "graph-collapse", "aria-label": "Collapse by module" });
  const info = h("span", { class: "muted graph-info" }, "Laying out ...");
  const plot = h("div", { class: "graph-plot" });
  clear(container, h("div", { class: "graph-bar" }, search, count, collapseSelect, info), plot);
  let graph;
  try {
    [graph] = await Promise.all([api.graph(key, compileId, stage, collapse), loadPlotly()]);
  } catch (error) {
    clear(info, `Graph unavailable: ${error.message}`);
    return;
  }
  if (!plot.isConnected) return; // the pane moved on while we waited
  const fetched = performance.now();
  clear(collapseSelect, ["auto", "off", ...Array.from({ length: graph.module_depth }, (_, i) => String(i + 1))]
    .map((v) => h("option", { value: v, selected: v === collapse },
      v === "auto" ? "collapse: auto" : v === "off" ? "collapse: off" : `collapse: module level ${v}`)));
  collapseSelect.onchange = () => onCollapse(collapseSelect.value);
  const shown = graph.nodes.length;
  clear(info, `${shown.toLocaleString()} nodes` +
    (shown !== graph.total_nodes ? ` (of ${graph.total_nodes.toLocaleString()}, by module)` : "") +
    ` · ${graph.edges.length.toLocaleString()} edges · layout: ${graph.engine}`);
  await window.Plotly.newPlot(plot, traces(graph, dark), layoutFor(dark), {
    scrollZoom: true, displaylogo: false, responsive: true,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
  });
  plot.on("plotly_click", (event) => {
    const index = event.points?.[0]?.customdata;
    const line = index != null ? graph.nodes[index]?.line : null;
    if (line) onUserLine(line);
  });
  wireSearch(plot, graph, search, count);
  container.dataset.ready = "1";
  window.__tbGraph = { nodes: shown, engine: graph.engine, fetch_ms: fetched - started,
                       plot_ms: performance.now() - fetched, total_ms: performance.now() - started };
}

function wireSearch(plot, graph, search, count) {
  let matches = [];
  let current = -1;
  const matchTrace = plot.data.length - 1;
  const zoomTo = (nodes) => {
    const xs = nodes.map((n) => n.x), ys = nodes.map((n) => n.y);
    const pad = 3;
    window.Plotly.relayout(plot, {
      "xaxis.range": [Math.min(...xs) - pad, Math.max(...xs) + pad],
      "yaxis.range": [Math.min(...ys) - pad, Math.max(...ys) + pad],
    });
  };
  search.addEventListener("input", () => {
    const query = search.value.trim().toLowerCase();
    matches = query ? graph.nodes.filter((n) => n.name.toLowerCase().includes(query)) : [];
    current = -1;
    clear(count, query ? `${matches.length} match${matches.length === 1 ? "" : "es"}` : "");
    window.Plotly.restyle(plot, { x: [matches.map((n) => n.x)], y: [matches.map((n) => n.y)] }, [matchTrace]);
    if (matches.length && matches.length <= 50) zoomTo(matches);
  });
  search.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !matches.length) return;
    current = (current + 1) % matches.length;
    zoomTo([matches[current]]);
    clear(count, `${current + 1} of ${matches.length}`);
  });
}
