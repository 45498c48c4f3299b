"""torchbolt's web layer: a thin Flask app over `compiler_core` (jobs, events, share store).

`create_app(test_config, workers)` builds the app and starts its compile workers. Settings:

- DATA_DIR: the share store (env TORCHBOLT_DATA, default ./var);
- WORKERS: warm compile workers (default 1; 0 serves stored results only); SANDBOX: passed to
  each `Worker(sandbox=...)` when not None (None: the engine sandboxes jobs when it can);
- ENVIRONMENTS: other Pythons (venvs with another torch) whose workers run jobs beside the
  server's own, WORKERS each (`torchbolt serve --environment PYTHON`; the page's picker);
- BROKER: None (the embedded default: in-process queue, SQLite), or redis://HOST:PORT/DB: jobs,
  live records and results go through Redis to worker hosts (app/broker.py); WORKERS then only
  says how many worker slots `python -m app` starts beside the server;
- TOKEN: None, or the access token every request must carry (app/auth.py); without one only
  requests to a loopback name (or one of ALLOWED_HOSTS) are answered; state-changing requests
  from another site's page are refused either way (app/origin.py);
- JOBS_PER_CLIENT (2): a client's jobs queued or running at once; MAX_TIMEOUT (120 s): the
  largest `timeout` option a job may ask for;
- THREADS (48, the server's): with STREAM_RESERVE (8) and STREAMS_PER_CLIENT (4), the caps on
  open event streams (app/streams.py): THREADS - STREAM_RESERVE in all;
- HEAVY_PER_CLIENT (2): a client's expensive requests at once (graph layouts, reports, whole
  results); all clients together 2 * HEAVY_PER_CLIENT + 1, at least STREAM_RESERVE // 2;
- SUBMIT_BURST (10), SUBMITS_PER_MINUTE (30): a client's submits, cached answers and uploads
  included (app/budget.py; its graph layouts and uploads have budgets of their own, in
  compiler_core/limits.py); RESULT_CACHE_BYTES (128 MiB): stored results kept expanded and as gzipped
  answers (app/results.py);
- GRAPH_CACHE_BYTES, REPORT_CACHE_BYTES (64 MiB each): the caches of laid-out graph views and
  built reports (app/graphview.py, app/reports.py); the requests that named each view (its
  aliases) take a 64th of GRAPH_CACHE_BYTES more;
- WARM_FIRST_LESSON (True): once ready, run the first lesson unless its result is stored, so
  a first visit (which opens on it) is answered from the store.

`workers` hands in `compiler_core.Worker`s to use instead (tests share one warm worker with the
engine's tests).
"""

from __future__ import annotations

import os

from flask import Flask

from compiler_core import PAGE_ASSETS, Broker, Worker, list_lessons

from . import api, auth, errors, http, origin, pages, reports
from .budget import Budget, SubmitBudget
from .graphview import layout_refusal, layout_settings
from .http import BodyCache
from .manager import RunManager
from .reports import upload_refusal, upload_settings
from .store import Store
from .streams import Limiter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def create_app(test_config: dict | None = None, workers: list[Worker] | None = None) -> Flask:
    app = Flask(__name__, static_folder=os.path.join(PAGE_ASSETS, "static"),
                template_folder=os.path.join(PAGE_ASSETS, "templates"))
    app.config.from_mapping(
        DATA_DIR=os.environ.get("TORCHBOLT_DATA", os.path.join(ROOT, "var")),
        WORKERS=1, SANDBOX=None, BROKER=None, TOKEN=None, JOBS_PER_CLIENT=2, MAX_TIMEOUT=120.0,
        THREADS=48, STREAM_RESERVE=8, STREAMS_PER_CLIENT=4, WARM_FIRST_LESSON=True,
        MAX_CONTENT_LENGTH=1024 * 1024, HEAVY_PER_CLIENT=2,
        GRAPH_CACHE_BYTES=64 * 1024 * 1024, REPORT_CACHE_BYTES=64 * 1024 * 1024,
        ALLOWED_HOSTS=(), SUBMITS_PER_MINUTE=30, SUBMIT_BURST=10,
        RESULT_CACHE_BYTES=128 * 1024 * 1024, ENVIRONMENTS=(),
    )
    app.config.update(test_config or {})
    app.json.sort_keys = False
    app.extensions["torchbolt.runs"] = _manager(app.config, workers).start()
    config = app.config
    app.extensions["torchbolt.streams"] = Limiter(
        config["STREAMS_PER_CLIENT"], config["THREADS"] - config["STREAM_RESERVE"])
    app.extensions["torchbolt.heavy"] = Limiter(
        config["HEAVY_PER_CLIENT"], heavy_total(config),
        "expensive requests (graph layouts, reports, whole results)",
        "wait for one, then ask again")
    app.extensions["torchbolt.submits"] = SubmitBudget(config["SUBMITS_PER_MINUTE"],
                                                       config["SUBMIT_BURST"])
    app.extensions["torchbolt.graph_cache"] = BodyCache(config["GRAPH_CACHE_BYTES"])
    app.extensions["torchbolt.graph_views"] = BodyCache(config["GRAPH_CACHE_BYTES"] // 64)
    app.extensions["torchbolt.layouts"] = Budget(layout_settings, layout_refusal)
    app.extensions["torchbolt.uploads"] = Budget(upload_settings, upload_refusal)
    app.extensions["torchbolt.report_cache"] = BodyCache(config["REPORT_CACHE_BYTES"])
    origin.register(app)  # before the token check: a foreign page learns nothing
    auth.register(app)
    app.register_blueprint(api.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(reports.bp)
    errors.register(app)
    http.register(app)
    return app


def heavy_total(config) -> int:
    """All clients' expensive requests at once: one more than two clients may hold (a client
    with two addresses never holds them all), and at least half the threads kept from streams."""
    return max(2 * config["HEAVY_PER_CLIENT"] + 1, config["STREAM_RESERVE"] // 2)


def _manager(config, workers: list[Worker] | None) -> RunManager:
    if config["BROKER"]:
        from .broker import BrokerManager
        return BrokerManager(Broker(config["BROKER"]), config["JOBS_PER_CLIENT"],
                             local_slots=config["WORKERS"],
                             cache_bytes=config["RESULT_CACHE_BYTES"])
    if workers is None:
        sandbox = config["SANDBOX"]
        workers = [Worker(python=python) if sandbox is None
                   else Worker(sandbox=sandbox, python=python)
                   for python in (None, *config["ENVIRONMENTS"]) for _ in range(config["WORKERS"])]
    warm = tuple(example.source for _, example in list_lessons()[:1]
                 if config["WARM_FIRST_LESSON"])
    return RunManager(Store(config["DATA_DIR"]), workers, config["JOBS_PER_CLIENT"], warm=warm,
                      cache_bytes=config["RESULT_CACHE_BYTES"])
