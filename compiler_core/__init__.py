"""torchbolt's engine: run a script under the real torch.compile and capture every stage.

    from compiler_core import Worker, Options
    result = Worker().run(source, Options(device="cpu"))

The CLI is `python -m compiler_core run SCRIPT.py`. This package never imports Flask, and its
caller side never imports torch (only the worker process does).
"""

from .options import Options, OptionsError
from .supervisor.sandbox import SandboxCheck
from .supervisor.sandbox import check as sandbox_check
from .supervisor.worker import Worker, WorkerError

__all__ = ["Options", "OptionsError", "SandboxCheck", "Worker", "WorkerError", "sandbox_check"]
