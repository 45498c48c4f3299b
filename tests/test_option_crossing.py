"""Options cross the process boundary once: the API parses them into one `Options`, whose one
serialized form (`Options.to_dict()`, made as it is validated) is what the job process receives,
unchanged, and rebuilds once; a retried run keeps the same `Options`; an option the API does not
know is refused there, named."""

from __future__ import annotations

import uuid

from app.runs import Run
from compiler_core import Options
from compiler_core.supervisor.process import JobProcess

from test_app_fixtures import wait_for_handle

pytest_plugins = ["test_app_fixtures"]


def test_a_retried_run_keeps_its_options():
    options = Options(device="cpu", measure=False)
    run = Run("key", "print(1)\n", options)
    run.requeue("its worker died")
    assert run.job.options is options
    assert run.job.options.to_dict() is options.to_dict()


def test_the_job_process_receives_the_options_the_api_made(client, monkeypatch):
    made, sent = [], []
    parse = Options.from_dict.__func__

    def spy_parse(cls, raw, **kwargs):
        made.append(parse(cls, raw, **kwargs))
        return made[-1]

    send_job = JobProcess.send_job

    def spy_send(self, job, *args):
        sent.append(job["options"])
        return send_job(self, job, *args)
    monkeypatch.setattr(Options, "from_dict", classmethod(spy_parse))
    monkeypatch.setattr(JobProcess, "send_job", spy_send)
    source = f"# {uuid.uuid4().hex}\nprint(6 * 7)\n"  # never stored: it runs
    response = client.post("/api/compile", json={"source": source, "options": {
        "device": "cpu", "measure": False, "views": False, "timeout": 60}})
    assert response.status_code == 202, response.get_json()
    data = wait_for_handle(client, response.get_json()["handle"])
    assert "42" in data["result"]["stdout"], data  # it ran (NoCompile: it compiles nothing)
    assert len(made) == 1, "the server parsed the options more than once"
    assert len(sent) == 1 and sent[0] is made[0].to_dict()
    assert data["result"]["options"] == made[0].to_dict()


def test_an_unknown_option_is_refused_at_the_api_by_name(client):
    response = client.post("/api/compile", json={"source": "print(1)\n",
                                                 "options": {"speedup": 11}})
    assert response.status_code == 400
    assert "unknown option 'speedup'" in response.get_json()["error"]
