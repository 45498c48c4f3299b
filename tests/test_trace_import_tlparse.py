"""Trace import reads what tlparse reads (issue 40, item 8).

tlparse's own test logs (tests/data/tlparse/, from pytorch/tlparse's tests/inputs, BSD-3: see
the README there) are read by tlparse, the reference reader of TORCH_TRACE logs (installed from
requirements.txt), and by torchbolt's reader (compiler_core/report/trace_log.py), and compared:
the compiles tlparse lists and the stages it shows of each, its restarts and compile failures,
the exported programs it shows with `--export` and the ranks of `--all-ranks-html`. What
torchbolt does not read must be named in the result (`trace_unread`), never dropped silently.

A log of real compiles made by the tests (an encoder, its recompiles answered by Inductor's
caches: issue 46) reads as tlparse reads it too.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from compiler_core.features import wrappers
from compiler_core.report.trace_log import parse_log, trace_result, user_file_of

pytest_plugins = ["test_trace_import_fixtures"]

DATA = Path(__file__).parent / "data" / "tlparse"
RANKS_DATA = Path(__file__).parent / "data" / "trace_ranks"
LOGS = sorted(p.name for p in DATA.iterdir() if p.suffix in (".log", ".txt"))
EXPORT_LOGS = ("export.log", "export_guard_added.log")
TLPARSE = shutil.which("tlparse") or os.path.join(sysconfig.get_path("scripts"), "tlparse")
# The entries tlparse shows as files of a compile, by the torchbolt stage that shows them.
STAGE_OF = {
    "dynamo_output_graph": "dynamo_graph", "dynamo_cpp_guards_str": "guards",
    "dynamo_guards": "guards", "aot_joint_graph": "aot_joint", "aot_forward_graph": "aot_forward",
    "aot_backward_graph": "aot_backward", "aot_inference_graph": "aot_inference",
    "inductor_post_grad_graph": "post_grad_graph", "after_post_grad_graph": "post_grad_graph",
    "inductor_output_code": "output_code", "compilation_metrics": "metrics",
    **{name: "aot_runtime_wrappers" for name in wrappers.SPEC.records},
}
# Entries torchbolt reads into views other than a stage of their own.
READ_INTO = {
    "inductor_provenance_tracking_node_mappings": "output code's and kernels' node links",
    "inductor_provenance_tracking_kernel_stack_traces": "output code's user lines",
    "recompile_reasons": "recompiles",
    "dynamo_graph_break_reason": "graph_breaks",
    "bwd_compilation_metrics": "metrics' backward",
    "dynamo_error": "the failure's line in the user's file",
    "torch_version": "the result's environment",
}
# A file tlparse writes per entry: NAME_N.EXT, the output code's NAME_HASH_N.EXT; a link's file
# is the link's name alone.
ARTIFACT_FILE = re.compile(r"^(?P<entry>.+?)(?:_[a-z0-9]{52})?_\d+\.\w+$")
RESTART_ROW = re.compile(r"<tr> <td> <a href='[^']*'>\[(?P<id>[^\]]+)\]</a>\s*</td>"
                         r"<td>(?:<pre>)?\s*(?P<type>\w+)\s*(?:</pre>)?</td>")
RESTART_COUNT = re.compile(r"This run had <strong><a href=\"failures_and_restarts.html\">"
                           r"(\d+) restart")


def tlparse(log: Path, out: Path, *flags: str) -> Path:
    proc = subprocess.run([TLPARSE, str(log), "-o", str(out), "--no-browser", "--overwrite",
                           *flags], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def frame_compile(tlparse_id: str) -> str | None:
    """`[0/0_1]` (attempt 1 of compile 0/0) -> `0/0`; `[-/-]` (no compile id) -> None."""
    cid = tlparse_id.strip("[]").split("_")[0]
    return None if cid == "-/-" else cid


def shown_entries(out: Path) -> dict[str | None, set[str]]:
    """Per compile id (None: outside any), the entries tlparse shows a file of."""
    shown: dict[str | None, set[str]] = {}
    for tlparse_id, listing in json.loads((out / "compile_directory.json").read_text()).items():
        entries = shown.setdefault(frame_compile(tlparse_id), set())
        for artifact in listing["artifacts"]:
            match = ARTIFACT_FILE.match(artifact["name"])
            entries.add(match["entry"] if match else artifact["name"])
    return shown


@pytest.fixture(scope="module")
def read(tmp_path_factory):
    """log name -> (tlparse's output folder, torchbolt's result), each log read once."""
    cache = {}

    def both(name: str):
        if name not in cache:
            out = tlparse(DATA / name, tmp_path_factory.mktemp("tl") / "out")
            text = (DATA / name).read_text(errors="replace")
            cache[name] = out, trace_result({name: text})
        return cache[name]
    return both


@pytest.mark.parametrize("name", LOGS)
def test_every_compile_and_stage_tlparse_shows(name, read):
    assert_reads_as_tlparse(*read(name))


def assert_reads_as_tlparse(out: Path, result: dict) -> None:
    """The compiles tlparse lists, the stages it shows of each and its recompiles are the
    result's; what else it shows is named in `trace_unread`."""
    shown = shown_entries(out)
    ours = {c["id"]: set(c["stages"]) for c in result["compiles"]}
    unread = result["trace_unread"]
    assert set(ours) == {cid for cid in shown if cid is not None}
    for cid, entries in shown.items():
        if cid is None:  # outside any compile: torchbolt shows stages per compile only
            unlisted = {e for e in entries if e not in unread and e not in READ_INTO
                        and f"{e} (outside any compile)" not in unread}
            assert not unlisted, f"outside any compile: tlparse shows {unlisted}, not listed"
            continue
        assert {STAGE_OF[e] for e in entries if e in STAGE_OF} == ours[cid] & set(
            STAGE_OF.values()), cid
        unlisted = set(entries) - set(STAGE_OF) - set(READ_INTO) - set(unread)
        assert not unlisted, f"{cid}: tlparse shows {unlisted}, torchbolt neither reads nor lists"
    recompiled = {cid for cid, entries in shown.items() if "recompile_reasons" in entries}
    assert recompiled == {r["compile_id"] for r in result["recompiles"]}
    assert result["stage_errors"] == []  # nothing dropped on the way (a log without a version)
    assert isinstance(result["environment"]["torch"], str)


@pytest.mark.parametrize("name", LOGS)
def test_restarts_and_failed_compiles_as_tlparse_counts_them(name, read):
    out, result = read(name)
    page = (out / "failures_and_restarts.html").read_text()
    theirs = sorted((frame_compile(m["id"]), m["type"]) for m in RESTART_ROW.finditer(page))
    count = RESTART_COUNT.search((out / "index.html").read_text())  # said only when there are any
    assert len(theirs) == (int(count[1]) if count else 0)
    ours = sorted([(c["id"], "RestartAnalysis") for c in result["compiles"]
                   for _ in c.get("restarts", [])]
                  + [(c["id"], c["failure"]["type"]) for c in result["compiles"] if c["failure"]])
    assert ours == theirs


@pytest.mark.parametrize("name", EXPORT_LOGS)
def test_exported_programs(name, tmp_path):
    out = tlparse(DATA / name, tmp_path / "out", "--export")
    theirs = sorted(p.read_text() for p in out.glob("*/exported_program_*.txt"))
    result = trace_result({name: (DATA / name).read_text(errors="replace")})
    assert theirs and [e["stages"]["exported_program"]["text"] for e in result["exports"]] == theirs
    # what tlparse's export report reads besides (guards added, data-dependent questions)
    assert {"guard_added", "expression_created"} <= set(result["trace_unread"])


def test_ranks_as_tlparse_names_them(tmp_path):
    """tlparse takes a log's rank from its file name (dedicated_log_torch_trace_rank_N[_x].log);
    the schedule logs' rank-2 file carries `"rank": 0` in every entry (tlparse's messy input)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    names = ("dedicated_log_torch_trace_rank_0_6u3fubwl.log",
             "dedicated_log_torch_trace_rank_2.log")
    for name in names:
        shutil.copy(DATA / name, folder / name)
    out = tlparse(folder, tmp_path / "out", "--all-ranks-html")
    ranks = sorted(int(p.name.split("_")[1]) for p in out.glob("rank_*") if p.is_dir())
    assert ranks == [0, 2]
    files = {name: (DATA / name).read_text() for name in names}
    for rank, name in zip(ranks, names):
        assert trace_result(files, rank=rank)["environment"]["trace_log"] == name
    # one rank's log on its own, as tlparse's multi_rank_messy_input holds it (that file is
    # byte-identical to simple.log: md5 c601683e3cc1336deefcb2b80c9a8db7)
    single = {"dedicated_log_torch_trace_rank_1.log": (DATA / "simple.log").read_text()}
    result = trace_result(single, rank=1)
    assert result["environment"]["trace_log"] == "dedicated_log_torch_trace_rank_1.log"
    assert [c["id"] for c in result["compiles"]] == ["0/0"]


def rank_folder(folder: Path, name: str) -> dict[int, str]:
    """A multi-rank folder in `folder`, {rank: file name}: tlparse's schedule logs (ranks 0 and 2,
    the same log) or a two-process run recorded here (tests/data/trace_ranks/, gzipped), where
    rank 1 recompiles and rank 0 does not."""
    folder.mkdir()
    if name == "tlparse":
        names = {0: "dedicated_log_torch_trace_rank_0_6u3fubwl.log",
                 2: "dedicated_log_torch_trace_rank_2.log"}
        for log in names.values():
            shutil.copy(DATA / log, folder / log)
        return names
    names = {}
    for packed in sorted(RANKS_DATA.glob("*.log.gz")):
        log = packed.name.removesuffix(".gz")
        (folder / log).write_bytes(gzip.decompress(packed.read_bytes()))
        names[int(log.split("_rank_")[1].split("_")[0])] = log
    return names


@pytest.mark.parametrize("name", ["tlparse", "recorded"])
def test_a_multi_rank_folder_reads_as_one_result_as_tlparse_reads_each_rank(name, tmp_path):
    """A folder of several ranks' logs is one result: each rank's compiles, their ids naming the
    rank, with the stages tlparse's `--all-ranks-html` shows in that rank's report, and that
    rank's recompiles naming its own compiles; `rank` still reads one rank alone."""
    names = rank_folder(tmp_path / "logs", name)
    out = tlparse(tmp_path / "logs", tmp_path / "out", "--all-ranks-html")
    files = {log: tmp_path / "logs" / log for log in names.values()}
    result = trace_result(files)
    alone = {rank: trace_result(files, rank=rank) for rank in names}
    assert [c["id"] for c in result["compiles"]] == [
        f"[rank {rank}] {c['id']}" for rank in sorted(names) for c in alone[rank]["compiles"]]
    for rank in names:
        prefix = f"[rank {rank}] "
        assert_reads_as_tlparse(out / f"rank_{rank}", {
            **result, "compiles": [{**c, "id": c["id"].removeprefix(prefix)}
                                   for c in result["compiles"] if c["id"].startswith(prefix)],
            "recompiles": [{**r, "compile_id": r["compile_id"].removeprefix(prefix)}
                           for r in result["recompiles"] if r["compile_id"].startswith(prefix)]})
    ids = {c["id"] for c in result["compiles"]}
    assert {m["previous"] for r in result["recompiles"] for m in r["misses"]} <= ids
    if name == "recorded":
        assert [r["compile_id"] for r in result["recompiles"]] == ["[rank 1] 0/1"]
        assert result["recompiles"][0]["misses"][0]["previous"] == "[rank 1] 0/0"


def test_a_generated_encoder_log_reads_as_tlparse_reads_it(encoder_log, tmp_path):
    """A log of real compiles made here (tests/test_trace_import_fixtures.py), read from its file
    a line at a time; the cache hits' compiles keep their post-grad graph and output code (the
    hits log their provenance artifacts empty)."""
    log = encoder_log
    out = tlparse(log, tmp_path / "out")
    result = trace_result({log.name: log})
    assert_reads_as_tlparse(out, result)
    encoder = [c for c in result["compiles"] if c["id"].startswith("0/")]
    assert [c["id"] for c in encoder] == ["0/0", "0/1", "0/2"]
    assert all({"post_grad_graph", "output_code", "aot_joint"} <= set(c["stages"])
               for c in encoder)
    assert result == trace_result({log.name: log.read_text(errors="replace")})


def test_a_compiled_modules_log_names_the_script_not_torchs_wrapper():
    """Torch 2.15 compiles a module's call as `external_utils.inner` (forward inlined), so the
    innermost frame of each `dynamo_start` is torch's: the script is the innermost frame outside
    it, here the recorded run's `two_ranks.py` (its README's command)."""
    for packed in sorted(RANKS_DATA.glob("*.log.gz")):
        text = gzip.decompress(packed.read_bytes()).decode()
        log = parse_log(packed.name.removesuffix(".gz"), text)
        assert [r["meta"]["stack"][-1]["filename"].endswith("external_utils.py")
                for r in log.records if r["name"] == "dynamo_start"][:1] == [True]
        assert os.path.basename(user_file_of(log.records)) == "two_ranks.py"
