"""torchbolt's web layer: a thin Flask app over `compiler_core` (jobs, events, share store).

`create_app(test_config, workers)` builds the app and starts its compile workers; settings:
DATA_DIR (share store; env TORCHBOLT_DATA, default ./var), WORKERS (warm compile workers,
default 1; 0 serves stored results only). `workers` hands in `compiler_core.Worker`s to use
instead (tests share one warm worker with the engine's tests).
"""

from __future__ import annotations

import os

from flask import Flask

from compiler_core import Worker

from . import api, errors, http, pages
from .manager import JobManager
from .store import Store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def create_app(test_config: dict | None = None, workers: list[Worker] | None = None) -> Flask:
    app = Flask(__name__, static_folder=os.path.join(ROOT, "static"),
                template_folder=os.path.join(ROOT, "templates"))
    app.config.from_mapping(
        DATA_DIR=os.environ.get("TORCHBOLT_DATA", os.path.join(ROOT, "var")),
        WORKERS=1,
        MAX_CONTENT_LENGTH=1024 * 1024,
    )
    app.config.update(test_config or {})
    app.json.sort_keys = False
    if workers is None:
        workers = [Worker() for _ in range(app.config["WORKERS"])]
    manager = JobManager(Store(app.config["DATA_DIR"]), workers).start()
    app.extensions["torchbolt.jobs"] = manager
    app.register_blueprint(api.bp)
    app.register_blueprint(pages.bp)
    errors.register(app)
    http.register(app)
    return app
