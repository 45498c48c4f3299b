"""Benchmark: a 5,000-node graph laid out and interactive in headless Chromium (goal <= 1 s).

    python bench/graph_layout.py [--nodes 5000] [--repeats 3] [--out bench/out/graph_layout.json]

Builds a synthetic Dynamo graph shaped like a stack of transformer blocks (parameters, LayerNorm,
attention, MLP, residuals; module paths and source lines on every node), stores it as a result,
serves it with the real app (no compile worker) and drives the real page: with the Dynamo graph
open as code in the first pane, it clicks "Graph" and times until the drawing answers a hover
(the hover card of the node in the middle of the view). Measured per repeat: server layout,
fetch, drawing and click-to-interactive. Also measured: the same graph collapsed by module
("auto", which opens groups while at most 60 items show). Prints JSON and writes it to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time

from app import create_app
from app.graphview import graph_view
from app.store import Store, content_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOAL_S = 1.0
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
BLOCK = [  # (name, target, inputs as offsets into this block or "prev"/"res", module suffix)
    ("ln1_w", "placeholder", [], "ln1"), ("ln1_b", "placeholder", [], "ln1"),
    ("var_mean", "var_mean", ["prev"], "ln1"), ("mean", "getitem", [2], "ln1"),
    ("var", "getitem", [2], "ln1"), ("add_eps", "add", [4], "ln1"), ("rsqrt", "rsqrt", [5], "ln1"),
    ("sub", "sub", ["prev", 3], "ln1"), ("norm", "mul", [7, 6], "ln1"), ("scale", "mul", [8, 0], "ln1"),
    ("ln1", "add", [9, 1], "ln1"),
    ("qkv_w", "placeholder", [], "qkv"), ("qkv_b", "placeholder", [], "qkv"),
    ("qkv_t", "permute", [11], "qkv"), ("qkv", "addmm", [12, 10, 13], "qkv"),
    ("split", "split", [14], None), ("q", "getitem", [15], None), ("k", "getitem", [15], None),
    ("v", "getitem", [15], None), ("q_h", "view", [16], None), ("k_h", "view", [17], None),
    ("v_h", "view", [18], None), ("k_t", "transpose", [20], None), ("scores", "matmul", [19, 22], None),
    ("scaled", "div", [23], None), ("masked", "masked_fill", [24], None),
    ("weights", "softmax", [25], None), ("attn", "matmul", [26, 21], None),
    ("attn_t", "transpose", [27], None), ("attn_r", "reshape", [28], None),
    ("proj_w", "placeholder", [], "proj"), ("proj_b", "placeholder", [], "proj"),
    ("proj_t", "permute", [30], "proj"), ("proj", "addmm", [31, 29, 32], "proj"),
    ("res1", "add", ["prev", 33], None),
    ("ln2_w", "placeholder", [], "ln2"), ("ln2_b", "placeholder", [], "ln2"),
    ("ln2_vm", "var_mean", [34], "ln2"), ("ln2_m", "getitem", [37], "ln2"),
    ("ln2_sub", "sub", [34, 38], "ln2"), ("ln2", "mul", [39, 35], "ln2"),
    ("fc1_w", "placeholder", [], "mlp.0"), ("fc1_b", "placeholder", [], "mlp.0"),
    ("fc1", "addmm", [42, 40, 41], "mlp.0"), ("gelu", "gelu", [43], "mlp.1"),
    ("fc2_w", "placeholder", [], "mlp.2"), ("fc2_b", "placeholder", [], "mlp.2"),
    ("fc2", "addmm", [46, 44, 45], "mlp.2"), ("res2", "add", [34, 47], None),
]


def module_stack(path: str | None) -> list[list[str]]:
    """`L['self'].layers.3.mlp.0` -> its nn_module_stack as the engine records it: every
    enclosing module, outermost first, as [path, class] (ModuleList, Block, Sequential, Linear)."""
    if not path:
        return []
    parts = path.split(".")
    classes = {1: "ModuleList", 2: "Block"}
    return [[".".join(parts[:i + 1]), classes.get(i, "Sequential" if parts[i] == "mlp" else "Linear")]
            for i in range(1, len(parts))]


def transformer_nodes(count: int) -> list[dict]:
    """Dynamo-style node rows: `count` nodes of stacked blocks, then the output."""
    nodes = [{"name": "l_x_", "op": "placeholder", "target": "L_x_", "shape": ["8", "128", "512"],
              "dtype": "float32", "line": 30, "module": None, "inputs": []}]
    prev, layer = "l_x_", 0
    while len(nodes) < count - 1:
        names = [f"{name}_{layer}" for name, *_ in BLOCK]
        for i, (name, target, inputs, module) in enumerate(BLOCK):
            if len(nodes) >= count - 1:
                break
            nodes.append({
                "name": names[i], "op": "placeholder" if target == "placeholder" else "call_function",
                "target": target, "shape": ["8", "128", "512"], "dtype": "float32",
                "line": 31 + i // 4, "module": f"L['self'].layers.{layer}" + (f".{module}" if module else ""),
                "inputs": [prev if x == "prev" else names[x] for x in inputs]})
            nodes[-1]["modules"] = module_stack(nodes[-1]["module"])
        prev, layer = nodes[-1]["name"], layer + 1
    nodes.append({"name": "output", "op": "output", "target": "output", "shape": None,
                  "dtype": None, "line": None, "module": None, "inputs": [prev]})
    return nodes


def synthetic_result(nodes: list[dict]) -> dict:
    text = "# synthetic graph for bench/graph_layout.py\n"
    stage = {"stage": "dynamo_graph", "compile_id": "0/0", "title": "Dynamo FX graph (synthetic)",
             "language": "python", "text": text, "src_lines": [None, None], "sections": [],
             "nodes": nodes}
    return {"version": 1, "environment": {"torch": "synthetic"}, "options": {}, "stdout": "",
            "stderr": "", "error": None, "finished": True, "duration_s": 0, "graph_breaks": [],
            "recompiles": [], "stage_errors": [], "notes": [],
            "compiles": [{"id": "0/0", "frame": {"name": "forward", "filename": "bench", "line": 1},
                          "stages": {"dynamo_graph": stage}, "kernels": []}]}


def serve(data_dir: str):
    from waitress import create_server
    server = create_server(create_app({"DATA_DIR": data_dir, "WORKERS": 0}), host="127.0.0.1",
                           port=0, threads=8)
    threading.Thread(target=server.run, daemon=True).start()
    return server


def click_to_interactive(page, url: str, collapse: str) -> dict:
    """Open the page with the graph stage as code, click Graph, wait until a hover answers."""
    settings = {"paneCount": 2, "panes": [
        {"compile": "0/0", "stage": "dynamo_graph", "view": "text", "collapse": collapse},
        {"compile": "0/0", "stage": "metrics", "view": "text"},
        {"compile": "0/0", "stage": "metrics", "view": "text"}]}
    page.add_init_script(f"localStorage.setItem('torchbolt.settings.v1', {json.dumps(json.dumps(settings))})")
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    pane = ".pane[data-index='0']"
    start = page.evaluate("performance.now()")
    page.click(f"{pane} .segmented button:has-text('Graph')")
    page.wait_for_selector(f"{pane} .pane-body[data-ready]", timeout=60_000)
    drawn = page.evaluate("performance.now()")
    x, y = page.evaluate("""(sel) => {  // a node in the middle of the view
        const view = document.querySelector(sel + ' .pane-body').graphView;
        const box = view.canvas.canvas.getBoundingClientRect();
        const mid = [box.left + box.width / 2, box.top + box.height / 2];
        const dist = (n) => Math.hypot(...view.canvas.clientPoint(n).map((v, i) => v - mid[i]));
        return view.canvas.clientPoint(view.graph.nodes.reduce((a, b) => dist(a) <= dist(b) ? a : b));
    }""", pane)
    page.mouse.move(x, y)
    page.wait_for_selector(f"{pane} .graph-card:not([hidden])", timeout=10_000)
    hovered = page.evaluate("performance.now()")
    graph = page.evaluate("window.__tbGraph")
    return {"nodes_drawn": graph["nodes"], "engine": graph["engine"],
            "click_to_request_ms": round(graph["started"] - start),
            "fetch_and_layout_ms": round(graph["fetch_ms"]), "draw_ms": round(graph["plot_ms"]),
            "click_to_drawn_ms": round(drawn - start), "click_to_interactive_ms": round(hovered - start)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "graph_layout.json"))
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    nodes = transformer_nodes(args.nodes)
    result = synthetic_result(nodes)
    started = time.perf_counter()
    view = graph_view(result["compiles"][0], "dynamo_graph", result, "off")
    server_layout_ms = (time.perf_counter() - started) * 1000
    collapsed = graph_view(result["compiles"][0], "dynamo_graph", result, "auto")

    with tempfile.TemporaryDirectory() as data_dir:
        key = content_key("bench", {}, "synthetic")
        Store(data_dir).put(key, "# synthetic", {}, result)
        server = serve(data_dir)
        url = f"http://127.0.0.1:{server.effective_port}/r/{key}"
        runs = {"off": [], "auto": []}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1600, "height": 900})
            for collapse in ("off", "auto"):
                for _ in range(args.repeats):
                    page = context.new_page()
                    runs[collapse].append(click_to_interactive(page, url, collapse))
                    page.close()
            browser.close()
        server.close()

    median = statistics.median(r["click_to_interactive_ms"] for r in runs["off"]) / 1000
    report = {
        "benchmark": "graph_layout", "nodes": len(nodes), "edges": len(view["edges"]),
        "layout_engine": view["engine"], "server_layout_ms": round(server_layout_ms),
        "response_kb": round(len(json.dumps(view)) / 1024),
        "collapsed_auto": {"nodes": len(collapsed["nodes"]), "engine": collapsed["engine"]},
        "runs_uncollapsed": runs["off"], "runs_collapsed_auto": runs["auto"],
        "median_click_to_interactive_s": round(median, 3), "goal_s": GOAL_S, "meets_goal": median <= GOAL_S,
    }
    text = json.dumps(report, indent=1)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
