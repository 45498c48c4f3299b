// Draws a laid-out graph on a canvas, with level of detail: boxes, edges with arrows and the
// boxes of expanded module groups are painted on the canvas (5,000 nodes paint in a few ms);
// labels are elements over it, made only for the boxes on screen that are big enough to hold
// them. Each label is clipped to its own box and no two boxes overlap (the server's layout sizes
// boxes to their labels), so labels never overlap; zoomed out they are hidden and the hover card
// names the node. Pan by dragging, zoom with the wheel. Marks, in the page's colours: search
// matches and the selected node in the focus yellow, a selection's counterparts outlined in the
// accent (as linked lines are in the text panes), the node in view after a step in orange.

import { h, clear } from "./dom.js";

const LABEL_MIN_PX = 8; // a label's font below this size is not drawn
const LABEL_FONT = 11; // px at zoom 1, as the server sized the boxes
const MAX_LABELS = 700; // more would cost more than they tell
const TITLE_H = 16; // a group box's title strip, in layout units (dot keeps it free)
const DRAG_PX = 4;
const READABLE = 0.85; // a later view's zoom (a group opened) when the graph's width allows it

export class GraphCanvas {
  // `setGraph(graph, colorOf, whole)`, `colorOf(node)` -> {fill, stroke}; `describe(node)` -> [lines] for the hover card;
  // `onClick(node)` and `onTitle(box)` when a node or a group box's title is clicked.
  constructor(container, { dark, describe, onClick, onTitle }) {
    Object.assign(this, { dark, describe, onClick, onTitle });
    this.canvas = h("canvas", { class: "graph-canvas", tabindex: "0",
                                "aria-label": "Graph: drag to pan, wheel to zoom, ] and [ step through marked nodes" });
    this.labels = h("div", { class: "graph-labels" });
    this.card = h("div", { class: "graph-card", hidden: true });
    this.el = h("div", { class: "graph-plot" }, this.canvas, this.labels, this.card);
    container.append(this.el);
    this.k = 1; this.tx = 0; this.ty = 0;
    this.marked = new Set();
    this.linked = new Set(); // counterparts of a node selected in another graph
    this.selected = null;
    this.focused = null;
    this.frame = 0;
    this.listen();
    new ResizeObserver(() => this.resize()).observe(this.el);
  }

  // `whole`: the view starts with the whole graph in it (else as `fit` says).
  setGraph(graph, colorOf, whole = false) {
    this.graph = graph;
    this.whole = whole;
    this.moved = false; // the user moved the view (or a node was centred): a resize keeps it
    this.focused = null;
    this.selected = null;
    this.linked = new Set();
    this.card.hidden = true;
    this.setColors(colorOf);
    this.resize();
  }

  resize() {
    const { width, height } = this.el.getBoundingClientRect();
    if (!width || !height) return;
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(width * ratio);
    this.canvas.height = Math.round(height * ratio);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.size = { width, height, ratio };
    if (!this.moved && this.graph) this.fit(this.whole);
    this.draw();
  }

  bounds() {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const n of this.graph.nodes) {
      x0 = Math.min(x0, n.x - n.w / 2); x1 = Math.max(x1, n.x + n.w / 2);
      y0 = Math.min(y0, n.y - n.h / 2); y1 = Math.max(y1, n.y + n.h / 2);
    }
    for (const { box } of this.graph.boxes) {
      x0 = Math.min(x0, box[0]); y0 = Math.min(y0, box[1]);
      x1 = Math.max(x1, box[2]); y1 = Math.max(y1, box[3]);
    }
    return [x0, y0, x1, y1];
  }

  // The whole graph in view, centred (`whole`: the view a graph opens with, and the Fit
  // button's); else the whole graph when labels can be read so, else a zoom where they can, at
  // the graph's top (its inputs), as a code listing starts (a group just opened). Again on a
  // resize, until the user moves the view.
  fit(whole = true) {
    this.moved = false;
    if (!this.size || !this.graph.nodes.length) return;
    const [x0, y0, x1, y1] = this.bounds();
    const pad = 16;
    const all = Math.min(1.25, (this.size.width - 2 * pad) / (x1 - x0), (this.size.height - 2 * pad) / (y1 - y0));
    const k = whole ? all : Math.max(all, READABLE);
    this.k = k;
    if (k === all) {
      this.tx = (this.size.width - (x1 - x0) * k) / 2 - x0 * k;
      this.ty = (this.size.height - (y1 - y0) * k) / 2 - y0 * k;
    } else { // centred on the middle one of the nodes that the top of the view shows
      const top = this.graph.nodes.filter((n) => n.y - y0 < this.size.height / k).map((n) => n.x)
        .sort((a, b) => a - b);
      this.tx = this.size.width / 2 - top[Math.floor(top.length / 2)] * k;
      this.ty = pad - y0 * k;
    }
    this.redraw();
  }

  // Centre a node at a readable zoom.
  focus(node) {
    this.focused = node;
    this.moved = true;
    this.k = Math.max(this.k, 1);
    this.tx = this.size.width / 2 - node.x * this.k;
    this.ty = this.size.height / 2 - node.y * this.k;
    this.redraw();
  }

  redraw() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  draw() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    if (!this.size || !this.graph) return;
    const { ratio, width, height } = this.size;
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.setTransform(ratio * this.k, 0, 0, ratio * this.k, ratio * this.tx, ratio * this.ty);
    this.drawBoxes(ctx);
    this.drawEdges(ctx);
    this.drawNodes(ctx);
    this.placeLabels();
  }

  drawBoxes(ctx) {
    ctx.lineWidth = 1 / this.k;
    for (const { box, depth } of this.graph.boxes) {
      ctx.fillStyle = `rgba(240,140,0,${0.05 + 0.03 * depth})`; // deeper groups a little darker
      ctx.strokeStyle = this.dark ? "#8a6a3a" : "#e0b070";
      ctx.fillRect(box[0], box[1], box[2] - box[0], box[3] - box[1]);
      ctx.strokeRect(box[0], box[1], box[2] - box[0], box[3] - box[1]);
    }
  }

  drawEdges(ctx) {
    const nodes = this.graph.nodes;
    const arrows = this.k * 8 >= 3; // arrowheads once they are a few pixels long
    ctx.strokeStyle = this.dark ? "#6b7280" : "#9aa1a9";
    ctx.fillStyle = ctx.strokeStyle;
    ctx.lineWidth = Math.max(1 / this.k, 0.6);
    const heads = [];
    const [vx0, vy0, vx1, vy1] = this.view();
    ctx.beginPath();
    for (const [a, b, route] of this.graph.edges) {
      const p = nodes[a], q = nodes[b]; // an edge stays within its ends' box, dot's routes nearly
      if (Math.max(p.y, q.y) < vy0 || Math.min(p.y, q.y) > vy1 ||
          Math.max(p.x, q.x) + 200 < vx0 || Math.min(p.x, q.x) - 200 > vx1) continue; // off screen
      if (route && route.length >= 10) { // dot's cubic Bézier, then the arrow's tip
        const end = route.length - 2;
        ctx.moveTo(route[0], route[1]);
        for (let i = 2; i + 5 < end; i += 6) {
          ctx.bezierCurveTo(route[i], route[i + 1], route[i + 2], route[i + 3], route[i + 4], route[i + 5]);
        }
        heads.push([route[end - 2], route[end - 1], route[end], route[end + 1]]);
      } else {
        const from = [p.x, p.y + p.h / 2], to = [q.x, q.y - q.h / 2];
        ctx.moveTo(from[0], from[1]);
        ctx.lineTo(to[0], to[1]);
        heads.push([from[0], from[1], to[0], to[1]]);
      }
    }
    ctx.stroke();
    if (!arrows) return;
    ctx.beginPath();
    for (const [x0, y0, x1, y1] of heads) {
      const angle = Math.atan2(y1 - y0, x1 - x0), len = 8, spread = 0.4;
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - len * Math.cos(angle - spread), y1 - len * Math.sin(angle - spread));
      ctx.lineTo(x1 - len * Math.cos(angle + spread), y1 - len * Math.sin(angle + spread));
      ctx.closePath();
    }
    ctx.fill();
  }

  // Nodes by colour, so that each colour is one path (a canvas state change per node would
  // cost more than the drawing).
  setColors(colorOf) {
    this.colorOf = colorOf;
    this.buckets = new Map();
    for (const n of this.graph?.nodes ?? []) {
      const { fill, stroke } = colorOf(n);
      const key = `${fill}|${stroke}`;
      if (!this.buckets.has(key)) this.buckets.set(key, { fill, stroke, nodes: [] });
      this.buckets.get(key).nodes.push(n);
    }
    this.redraw();
  }

  // The view's bounds in layout units, with a margin of one box.
  view() {
    const [x0, y0] = this.toWorld(0, 0), [x1, y1] = this.toWorld(this.size.width, this.size.height);
    return [x0 - 120, y0 - 40, x1 + 120, y1 + 40];
  }

  drawNodes(ctx) {
    ctx.lineWidth = Math.max(1.2 / this.k, 1);
    const [vx0, vy0, vx1, vy1] = this.view();
    for (const { fill, stroke, nodes } of this.buckets.values()) {
      ctx.beginPath();
      for (const n of nodes) {
        if (n.x < vx0 || n.x > vx1 || n.y < vy0 || n.y > vy1) continue;
        const x = n.x - n.w / 2, y = n.y - n.h / 2;
        ctx.rect(x, y, n.w, n.h);
        if (n.kind === "group") ctx.rect(x + 3, y + 3, n.w - 6, n.h - 6); // a stack of nodes
      }
      ctx.fillStyle = fill;
      ctx.fill("evenodd");
      ctx.strokeStyle = stroke;
      ctx.stroke();
    }
    const style = getComputedStyle(this.el);
    const focus = style.getPropertyValue("--focus").trim() || "#fab005";
    ctx.lineWidth = 3 / this.k;
    ctx.strokeStyle = focus;
    for (const n of this.marked) ctx.strokeRect(n.x - n.w / 2 - 3, n.y - n.h / 2 - 3, n.w + 6, n.h + 6);
    this.drawSelection(ctx, focus, style.getPropertyValue("--accent").trim() || "#ee4c2c");
    if (this.focused) {
      ctx.strokeStyle = "#e8590c";
      const n = this.focused;
      ctx.strokeRect(n.x - n.w / 2 - 5, n.y - n.h / 2 - 5, n.w + 10, n.h + 10);
    }
  }

  // The selected node filled in the focus colour; counterparts outlined in the accent, with a
  // minimum on-screen width so that they stay visible zoomed out.
  drawSelection(ctx, focus, accent) {
    const pad = Math.max(4, 3 / this.k);
    if (this.selected) {
      const n = this.selected;
      ctx.fillStyle = focus;
      ctx.globalAlpha = 0.35;
      ctx.fillRect(n.x - n.w / 2, n.y - n.h / 2, n.w, n.h);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = focus;
      ctx.strokeRect(n.x - n.w / 2 - pad, n.y - n.h / 2 - pad, n.w + 2 * pad, n.h + 2 * pad);
    }
    ctx.lineWidth = 2.5 / this.k;
    ctx.strokeStyle = accent;
    ctx.beginPath();
    for (const n of this.linked) ctx.rect(n.x - n.w / 2 - pad, n.y - n.h / 2 - pad, n.w + 2 * pad, n.h + 2 * pad);
    ctx.stroke();
  }

  // Label elements for the boxes on screen, when their text is big enough to read.
  placeLabels() {
    const font = Math.min(13, LABEL_FONT * this.k);
    const { width, height } = this.size;
    const shown = [];
    if (font >= LABEL_MIN_PX) {
      for (const n of this.graph.nodes) {
        const [sx, sy] = this.toScreen(n.x - n.w / 2, n.y - n.h / 2);
        const sw = n.w * this.k, sh = n.h * this.k;
        if (sx + sw < 0 || sy + sh < 0 || sx > width || sy > height) continue;
        const [title, sub] = n.label ?? [n.name, n.target ?? ""]; // label: short names (server)
        shown.push(h("div", { class: `graph-label ${n.kind}`, dataset: { id: n.id },
                              style: `left:${sx}px;top:${sy}px;width:${sw}px;height:${sh}px;font-size:${font}px` },
          h("b", {}, n.kind === "group" ? `▸ ${title}` : title), h("span", {}, sub)));
        if (shown.length > MAX_LABELS) break;
      }
      for (const b of this.graph.boxes) {
        const [sx, sy] = this.toScreen(b.box[0], b.box[1]);
        const sw = (b.box[2] - b.box[0]) * this.k;
        if (sx + sw < 0 || sy + TITLE_H * this.k < 0 || sx > width || sy > height) continue;
        shown.push(h("div", { class: "graph-label title", dataset: { id: b.id },
                              style: `left:${sx}px;top:${sy}px;width:${sw}px;height:${TITLE_H * this.k}px;font-size:${font}px` },
          `▾ ${b.label}`));
      }
    }
    clear(this.labels, shown.length > MAX_LABELS ? [] : shown);
    this.labels.dataset.count = String(this.labels.childElementCount);
  }

  toScreen(x, y) {
    return [x * this.k + this.tx, y * this.k + this.ty];
  }

  toWorld(sx, sy) {
    return [(sx - this.tx) / this.k, (sy - this.ty) / this.k];
  }

  // The node under a screen point, else the group box whose title strip is there.
  hit(sx, sy) {
    const [x, y] = this.toWorld(sx, sy);
    for (const n of this.graph.nodes) {
      if (Math.abs(x - n.x) <= n.w / 2 && Math.abs(y - n.y) <= n.h / 2) return { node: n };
    }
    let title = null; // the innermost (last drawn) box wins
    for (const b of this.graph.boxes) {
      if (x >= b.box[0] && x <= b.box[2] && y >= b.box[1] && y <= b.box[1] + TITLE_H) title = b;
    }
    return title ? { box: title } : null;
  }

  // Where a node is on the page (tests and benchmarks use it).
  clientPoint(node) {
    const rect = this.canvas.getBoundingClientRect();
    const [sx, sy] = this.toScreen(node.x, node.y);
    return [rect.left + sx, rect.top + sy];
  }

  listen() {
    let drag = null;
    const local = (event) => {
      const rect = this.canvas.getBoundingClientRect();
      return [event.clientX - rect.left, event.clientY - rect.top];
    };
    this.canvas.addEventListener("pointerdown", (event) => {
      this.canvas.focus({ preventScroll: true }); // for the keys
      drag = { start: local(event), tx: this.tx, ty: this.ty, moved: false };
      this.canvas.setPointerCapture(event.pointerId);
    });
    this.canvas.addEventListener("pointermove", (event) => {
      const [sx, sy] = local(event);
      if (drag) {
        const dx = sx - drag.start[0], dy = sy - drag.start[1];
        drag.moved ||= Math.hypot(dx, dy) > DRAG_PX;
        if (drag.moved) {
          this.tx = drag.tx + dx; this.ty = drag.ty + dy;
          this.moved = true;
          this.card.hidden = true;
          this.redraw();
          return;
        }
      }
      this.hover(sx, sy);
    });
    this.canvas.addEventListener("pointerup", (event) => {
      const clicked = drag && !drag.moved;
      drag = null;
      if (!clicked) return;
      const found = this.hit(...local(event));
      if (found?.node) this.onClick(found.node);
      else if (found?.box) this.onTitle(found.box);
    });
    this.canvas.addEventListener("pointerleave", () => { this.card.hidden = true; });
    this.canvas.addEventListener("wheel", (event) => {
      event.preventDefault();
      const [sx, sy] = local(event);
      const k = Math.min(8, Math.max(0.01, this.k * Math.exp(-event.deltaY * 0.0015)));
      this.tx = sx - (sx - this.tx) * (k / this.k);
      this.ty = sy - (sy - this.ty) * (k / this.k);
      this.k = k;
      this.moved = true;
      this.card.hidden = true;
      this.redraw();
    }, { passive: false });
  }

  hover(sx, sy) {
    const found = this.hit(sx, sy);
    this.canvas.style.cursor = found ? "pointer" : "grab";
    if (!found?.node) {
      this.card.hidden = true;
      return;
    }
    clear(this.card, this.describe(found.node).map((line, i) => h(i ? "div" : "b", {}, line)));
    this.card.hidden = false;
    const { width, height } = this.size;
    this.card.style.left = `${Math.min(sx + 14, width - this.card.offsetWidth - 4)}px`;
    this.card.style.top = `${Math.min(sy + 14, height - this.card.offsetHeight - 4)}px`;
  }
}
