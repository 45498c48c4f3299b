"""torchbolt's engine: run a script under the real torch.compile and capture every stage.

    from compiler_core import Worker, Options, Job
    result = Worker().run(source, Options(device="cpu"))
    # or, to follow it live:  job = Job(source, options, listener=print); worker.execute(job)

This module is the engine's only public face: `app/`, `bench/` and other callers import from
here, never from its subpackages. Importing it never loads torch (only job processes do):
`supervisor/` is the caller's side, `runtime/` runs inside the job process, `report/` turns
records into the result. It never imports Flask. The CLI is `torchbolt run SCRIPT.py`.
"""

from .catalogue import catalogue
from .cluster.client import Broker, BrokerDown
from .report.stored import compress_result, expand_result, result_json
from .cluster.protocol import environment_id, environment_identity
from .cluster.protocol import redact as redact_url
from .errors import ErrorKind
from .gallery import Example, get_example, list_examples
from .gallery.lessons import Lesson, list_lessons
from .gpu_gallery import list_examples as list_gpu_examples
from .options import Options, OptionsError
from .limits import limit
from .present.graphview import GraphTooLarge, MalformedResult, graph_view
from .report.index import result_index, stage_part
from .report.result import RESULT_VERSION, build_result
from .present.static_html import PAGE_ASSETS, report_html
from .features import GRAPH_STAGES
from .report.trace_log import placeholder_source, trace_result
from .supervisor.job import Job, empty_result
from .notebook import load_ipython_extension, unload_ipython_extension
from .supervisor.uploads import TraceError, read_trace_folder
from .supervisor.sandbox import SandboxCheck
from .supervisor.sandbox import check as sandbox_check
from .supervisor.worker import Worker, WorkerError


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


__all__ = ["Broker", "BrokerDown", "ErrorKind", "Example", "GRAPH_STAGES", "GraphTooLarge", "Job",
           "Lesson", "MalformedResult", "Options", "OptionsError", "PAGE_ASSETS", "SandboxCheck",
           "TraceError", "Worker", "WorkerError",
           "build_result", "capture_this_process", "catalogue", "compress_result", "empty_result",
           "engine_version", "environment_id", "environment_identity", "expand_result",
           "get_example", "graph_view", "limit", "list_examples", "list_gpu_examples",
           "list_lessons", "load_ipython_extension", "placeholder_source", "read_trace_folder",
           "redact_url", "report_html", "result_index", "result_json", "sandbox_check", "stage_part",
           "trace_result", "unload_ipython_extension"]
