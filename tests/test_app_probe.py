"""The server's start-up probe (each environment's first job, which reports its torch and
device): when its job process dies before the script starts, the server says so within a
bounded time, in GET /api/status and its log, instead of never listing the environment."""

from __future__ import annotations

import logging
import time

from app.manager import RunManager
from app.store import Store
from compiler_core.supervisor.process import JobProcess

REPORTED_WITHIN_S = 60  # a job process starts in well under a second on a warm CPU worker


def test_a_probe_whose_job_process_dies_is_reported(worker, tmp_path, monkeypatch, caplog):
    spec = JobProcess.spec  # a job folder that does not exist: the job process can't enter it
    monkeypatch.setattr(JobProcess, "spec", lambda self, *args: {**spec(self, *args),
                                                                 "job_dir": "/nonexistent/job"})
    caplog.set_level(logging.ERROR, logger="torchbolt.manager")
    manager = RunManager(Store(str(tmp_path)), [worker]).start()  # the session's warm worker
    started = time.monotonic()
    while not manager.status().get("unavailable"):
        assert time.monotonic() - started < REPORTED_WITHIN_S, "the probe's failure went unsaid"
        time.sleep(0.1)
    monkeypatch.undo()
    status = manager.status()
    assert status["environments"] == []
    [failure] = status["unavailable"]
    assert "before the script started" in failure["error"], failure
    # Named as an available environment is, as far as its probe told (nothing here), and by the
    # interpreter its workers run (`--environment PYTHON`), so a client can say which one is down.
    named = {"id": None, "torch": None, "triton": None, "device": None, "device_name": None,
             "workers": 1, "python": worker.python}
    assert {name: failure.get(name, "absent") for name in named} == named, failure
    assert any("probe" in message and "before the script started" in message
               for message in caplog.messages), caplog.messages
