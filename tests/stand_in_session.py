"""The job's capture session for a hook tested alone: the real `CaptureSession` (its compile-id
rule, pause and recording state stay in step with the job's), its records kept in memory."""

from __future__ import annotations

import io
import json

from compiler_core.options import Options
from compiler_core.runtime.session import CaptureSession
from compiler_core.wire import RecordWriter


class StandInSession(CaptureSession):
    def __init__(self, user_file: str = "/job/script.py", device: str = "cpu"):
        self.stream = io.StringIO()
        super().__init__(RecordWriter(self.stream), user_file, Options(device=device), device)

    def records(self) -> list[dict]:
        """The records written so far, in order, as the supervisor reads them."""
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]
