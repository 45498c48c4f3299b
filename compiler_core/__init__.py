"""torchbolt's engine: run a script under the real torch.compile and capture every stage.

    from compiler_core import Worker, Options, Job
    result = Worker().run(source, Options(device="cpu"))
    # or, to follow it live:  job = Job(source, options, listener=print); worker.execute(job)

This module is the engine's only public face, grouped by role: `app/`, `bench/` and the
`torchbolt` command import from here, never from its subpackages, and every name here has such a
caller (tests/test_boundaries.py holds both). Importing it never loads torch (only job processes
do). The packages, lowest layer first: `wire` (the record format), `parsers` (PyTorch's printed
text), `features` (one module per capability), `report` (records -> result), `present`
(layout, figures, HTML), then `runtime` (the job process) beside `supervisor` (the caller's
side), and `cluster` (Redis). It never imports Flask. The CLI is `torchbolt run SCRIPT.py`.
"""

# Running scripts: the worker, a job and its options, errors and limits.
from .errors import ErrorKind
from .limits import limit
from .options import Options, OptionsError
from .supervisor.builds import bounded_build
from .supervisor.job import Job, empty_result
from .supervisor.sandbox import check as sandbox_check
from .supervisor.worker import Worker
# What the engine offers: the catalogue, the gallery and the lessons.
from .catalogue import catalogue
from .gallery import get_example, list_examples
from .gallery.lessons import list_lessons
from .gpu_gallery import list_examples as list_gpu_examples
# Results: storing, indexing, graph views, static reports, uploaded TORCH_TRACE logs.
from .present.graphview import GraphTooLarge, MalformedResult, graph_expansion, graph_view
from .present.static_html import PAGE_ASSETS, report_html
from .report.index import result_index, stage_part
from .report.result import RESULT_VERSION
from .report.stored import compress_result, result_json
from .report.trace_log import placeholder_source
from .supervisor.uploads import TraceError, read_trace_folder
# Serving: fair turns between clients, and the Redis scale-out.
from .cluster.client import Broker, BrokerDown, StoreFull
from .cluster.protocol import environment_id, environment_identity
from .cluster.protocol import redact as redact_url
from .fairness import FairQueue, QueueRefused
# The notebook extension (`%load_ext torchbolt`).
from .notebook import load_ipython_extension, unload_ipython_extension


def engine_version() -> dict:
    """What a stored result depends on: the installed torch and the result format's version."""
    import importlib.metadata
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = None
    return {"torch": torch, "result": RESULT_VERSION}


def capture_this_process(stream, user_file: str):
    """Attach every capture hook to *this* process, writing records to `stream` (for measuring
    capture overhead; the engine itself captures inside its job processes). Imports torch."""
    from .runtime import capture_this_process as attach
    return attach(stream, user_file)


__all__ = [
    # running scripts
    "ErrorKind", "Job", "Options", "OptionsError", "Worker", "capture_this_process",
    "bounded_build", "empty_result", "engine_version", "limit", "sandbox_check",
    # what the engine offers
    "catalogue", "get_example", "list_examples", "list_gpu_examples", "list_lessons",
    # results
    "GraphTooLarge", "MalformedResult", "PAGE_ASSETS", "TraceError", "compress_result",
    "graph_expansion", "graph_view", "placeholder_source", "read_trace_folder", "report_html", "result_index",
    "result_json", "stage_part",
    # serving
    "Broker", "BrokerDown", "FairQueue", "QueueRefused", "StoreFull", "environment_id",
    "environment_identity", "redact_url",
    # notebook
    "load_ipython_extension", "unload_ipython_extension",
]
