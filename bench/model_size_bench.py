"""torchbolt's cost as models grow: `python bench/model_size_bench.py [--layers 2 8 16 32]
[--repeat 2] [--out bench/results/model_size.json]`.

The model is the issue's (14): an `nn.TransformerEncoder`, d_model 64, forward + backward,
compiled with the defaults. First, per size, `--repeat` rounds of two cold processes, taking turns:
- plain_s: `python script.py` (Inductor caches disabled; a fresh TMPDIR, so Inductor's
  precompiled header is built again as the engine's sandbox builds its own);
- engine_s: `python -m compiler_core run script.py --no-measure --no-views` (stages only: no
  timings, no Core ATen / prims views), and its result's bytes (whole, its index, gzip);
the ratio is that of the two medians (every sample is kept). Then, with nothing else running
(the web server starts only now: its warm-up would slow the first size's processes):
- page: the same code through `python -m app` in headless Chromium, measure off:
  first_stage_shown_s, from the first `stage` event reaching the page to a pane showing a stage's
  text; interactive_s, from the `done` event reaching the page to the final result shown with
  every pane's text (no pane still loading).
The machine is shared (the same plain script varied by 20 % here): the load average at each
size's start is recorded. A run for some sizes keeps the other sizes' rows of the output file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from compiler_core import result_index
from web_latency import free_port, wait_until_serving

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
MODEL = """import torch
import torch.nn as nn

layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
model = nn.TransformerEncoder(layer, num_layers={layers})
compiled = torch.compile(model)
x = torch.randn(8, 32, 64)
out = compiled(x)
out.sum().backward()
print(out.shape)
"""
# In the page: when a pane first shows a stage's text, and when, after `done`, the final
# result is shown with no pane still loading (times since the page's submit).
OBSERVER = """
new MutationObserver(() => {
  const t = window.__tbTiming;
  if (!t || t.submit == null) return;
  const now = performance.now() - t.submit;
  const text = [...document.querySelectorAll('#panes .cm-content')].some((e) => e.textContent);
  if (text && t.shown == null) t.shown = now;
  const loading = [...document.querySelectorAll('#panes .pane-body p.empty')]
    .some((e) => e.textContent.startsWith('Loading'));
  if (document.body.dataset.job === 'finished' && text && !loading && t.interactive == null) {
    t.interactive = now;
  }
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
"""


def load() -> float:
    return os.getloadavg()[0]


def timed(command: list[str], env: dict | None = None) -> float:
    """Wall seconds of `command` (its exit status is the caller's to judge)."""
    started = time.monotonic()
    subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return round(time.monotonic() - started, 2)


def plain(script: str) -> float:
    with tempfile.TemporaryDirectory(prefix="torchbolt-plain-") as tmp:
        env = {**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "TMPDIR": tmp}
        return timed([sys.executable, script], env)


def engine(script: str, out: str) -> dict:
    seconds = timed([sys.executable, "-m", "compiler_core", "run", script, "--no-measure", "--no-views",
                     "--timeout", "600", "--json", out], {**os.environ, "PYTHONPATH": ROOT})
    with open(out, encoding="utf-8") as fh:
        text = fh.read()
    result = json.loads(text)
    index = json.dumps(result_index(result)).encode()
    return {"engine_s": seconds, "error": result["error"] and result["error"]["type"],
            "result_bytes": len(text.encode()),
            "result_gzip_bytes": len(gzip.compress(json.dumps(result).encode(), 6)),
            "index_bytes": len(index), "index_gzip_bytes": len(gzip.compress(index, 6))}


def with_timeout(route) -> None:
    """The page leaves the time limit to the server (120 s): big models on a shared 2-core
    machine take longer, so the bench's submits ask for 600 s."""
    body = json.loads(route.request.post_data)
    body["options"]["timeout"] = 600
    route.continue_(post_data=json.dumps(body))


def page_times(browser, url: str, source: str) -> dict:
    page = browser.new_page(viewport={"width": 1600, "height": 900})
    page.add_init_script(OBSERVER)
    page.route("**/api/compile", with_timeout)
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    if page.is_checked("#options [name=measure]"):
        page.click("#options [name=measure]")
    page.click("#editor .cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(source)
    page.keyboard.press("Control+Enter")
    page.wait_for_function("window.__tbTiming?.interactive != null", timeout=900_000,
                           polling=100)
    timing = page.evaluate("window.__tbTiming")
    page.close()
    return {"page_first_stage_event_s": round(timing["firstStage"] / 1000, 3),
            "page_done_event_s": round(timing["doneEvent"] / 1000, 3),
            "first_stage_shown_s": round((timing["shown"] - timing["firstStage"]) / 1000, 3),
            "interactive_s": round((timing["interactive"] - timing["doneEvent"]) / 1000, 3)}


def cli_rounds(layers: int, work: str, repeat: int) -> dict:
    """Plain script and engine, taking turns `repeat` times; medians and every sample."""
    script = os.path.join(work, f"encoder_{layers}.py")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(MODEL.format(layers=layers))
    row = {"layers": layers, "load_at_start": round(load(), 2)}
    plains, engines = [], []
    for _ in range(repeat):
        plains.append(plain(script))
        run = engine(script, os.path.join(work, f"encoder_{layers}.json"))
        engines.append(run.pop("engine_s"))
        row.update(run)
    row.update(plain_s=round(statistics.median(plains), 2),
               engine_s=round(statistics.median(engines), 2),
               plain_samples_s=plains, engine_samples_s=engines)
    row["ratio"] = round(row["engine_s"] / row["plain_s"], 3)
    return row


def page_rows(rows: list[dict], work: str) -> None:
    """Each size's page times, through a web server started after the CLI rounds."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "app", "--port", str(port), "--data-dir",
                               os.path.join(work, "data"), "--max-timeout", "600"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    from playwright.sync_api import sync_playwright
    try:
        wait_until_serving(port, server)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                                 args=["--headless", "--no-sandbox"])
            for row in rows:
                row.update(page_times(browser, f"http://127.0.0.1:{port}/",
                                      MODEL.format(layers=row["layers"]) + "# page\n"))
                print(json.dumps(row), flush=True)
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 8, 16, 32])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "model_size.json"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="torchbolt-model-size-")
    rows = []
    for layers in args.layers:
        rows.append(cli_rounds(layers, work, args.repeat))
        print(json.dumps(rows[-1]), flush=True)
    page_rows(rows, work)
    if os.path.exists(args.out):  # sizes measured in an earlier run stay
        with open(args.out, encoding="utf-8") as fh:
            rows += [r for r in json.load(fh)["sizes"] if r["layers"] not in args.layers]
    report = {"model": "nn.TransformerEncoder d_model 64 nhead 4 ff 128, fw+bw, batch 8x32",
              "machine": f"{os.cpu_count()} CPUs, shared",
              "sizes": sorted(rows, key=lambda r: r["layers"])}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
