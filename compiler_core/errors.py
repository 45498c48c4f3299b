"""Error kinds: the `type` of a result's `error` when the engine, not the script, names it.

A script's own exception keeps its Python name (`ZeroDivisionError`, `SyntaxError` ...); every
other way a job can end has one kind here, used by the engine, the web app and the page alike
(the page gets them from the catalogue). `transient` kinds say nothing lasting about the code:
a resubmit runs it again instead of serving the stored result.
"""

from __future__ import annotations

import enum


class ErrorKind(str, enum.Enum):
    def __new__(cls, value: str, transient: bool, meaning: str):
        member = str.__new__(cls, value)
        member._value_ = value
        member.transient = transient
        member.meaning = meaning
        return member

    NO_COMPILE = "NoCompile", False, "the script never called a torch.compile'd callable"
    SYSTEM_EXIT = "SystemExit", False, "the script called sys.exit with a non-zero code"
    DEVICE_UNAVAILABLE = "DeviceUnavailable", False, "the job asked for a device the server lacks"
    OUTPUT_LIMIT = "OutputLimit", False, "the script wrote more than the output limit"
    RECORD_LIMIT = "RecordLimit", False, "the job wrote more records than the server keeps"
    DISK_LIMIT = "DiskLimit", False, "the script filled the job's disk space"
    PROCESS_LIMIT = "ProcessLimit", False, "the script ran more processes and threads than allowed"
    TIMEOUT = "Timeout", True, "the script ran longer than its time limit"
    MEMORY_LIMIT = "MemoryLimit", True, "the job used more than its memory limit"
    CPU_LIMIT = "CpuLimit", True, "the job used more than its CPU-time limit"
    CRASH = "Crash", True, "the job's process died from a signal"
    EXITED = "Exited", False, "the script ended its process (os._exit) before it finished"
    CANCELLED = "Cancelled", True, "the job was cancelled"
    WORKER_DIED = "WorkerDied", True, "the worker process died during the job"
    WORKER_ERROR = "WorkerError", True, "the worker could not run the job"
    BROKER_FULL = "BrokerFull", True, "the job broker (Redis) was full and refused the job"
    SERVER_ERROR = "ServerError", True, "the server failed outside the job"

    def __str__(self) -> str:  # "Timeout", not "ErrorKind.TIMEOUT", in f-strings and str()
        return self.value

    def error(self, message: str, line: int | None = None, **extra) -> dict:
        """A result's `error` of this kind."""
        return {"type": self.value, "message": message, "line": line, **extra}

    @classmethod
    def is_transient(cls, kind: str | None) -> bool:
        """True for a kind whose run should not be served from the store again."""
        return kind in cls._value2member_map_ and cls(kind).transient

    @classmethod
    def catalogue(cls) -> list[dict]:
        return [{"kind": k.value, "transient": k.transient, "meaning": k.meaning} for k in cls]
