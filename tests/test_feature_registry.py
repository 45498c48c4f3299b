"""The feature registry: every capability declared once, the derived tables consistent, and the
result builder holding records to their declared types (pure: no job runs here)."""

from __future__ import annotations

import copy
import importlib
import os
import pkgutil

import compiler_core.features as features
import compiler_core.runtime.hooks as runtime_hooks
from compiler_core.features import ATTACHMENTS, FEATURES, STAGES
from compiler_core.features.spec import INTEGER, LIST, record
from compiler_core.report.result import build_result, typed_records
from compiler_core.wire import read_records

REAL = os.path.join(os.path.dirname(__file__), "data", "print_graph_break.records.jsonl")
USER_FILE = "/job/main.py"


def test_every_feature_module_is_registered_once():
    modules = {m.name for m in pkgutil.iter_modules(features.__path__)} - {"spec"}
    declared = {f.name for f in FEATURES}
    for name in modules:
        module = importlib.import_module(f"compiler_core.features.{name}")
        feature = getattr(module, "FEATURE", None) or module.feature(())
        assert feature.name in declared, name
    assert len(declared) == len(FEATURES)


def test_stage_names_are_unique():
    names = [spec.name for spec in STAGES]
    assert len(names) == len(set(names))


def test_attachments_name_runtime_functions_in_dependency_order():
    assert all(a.startswith("runtime.") and ":" in a for a in ATTACHMENTS)
    order = {a: i for i, a in enumerate(ATTACHMENTS)}
    assert order["runtime.capture:attach_ir_loggers"] < order["runtime.hooks.fusion:attach"]
    assert order["runtime.callables:attach"] < order["runtime.aoti:attach"]
    assert order["runtime.programs:attach"] < order["runtime.aoti:attach"]


def test_each_job_side_hook_is_named_after_its_feature():
    """runtime/hooks/<feature>.py holds the hooks of that feature, and only its feature
    attaches it; every module there is some feature's."""
    hooks = {m.name for m in pkgutil.iter_modules(runtime_hooks.__path__)}
    attached = set()
    for feature in FEATURES:
        for target in feature.attach:
            module = target.split(":")[0]
            if module.startswith("runtime.hooks."):
                assert module == f"runtime.hooks.{feature.name}", (feature.name, target)
                attached.add(feature.name)
    assert hooks == attached


def test_a_record_type_checks_its_declared_fields_only():
    call = record("call", callable=INTEGER, compile_id="text?")
    assert call.problem({"meta": {"callable": 0, "compile_id": None, "extra": [1]}}) is None
    assert "callable" in call.problem({"meta": {"callable": "0"}})
    assert "callable" in call.problem({"meta": {"callable": True}})  # a bool is no integer
    assert record("x", True).problem({"meta": {}, "payload": None}) == "it has no text payload"
    assert record("x", items=LIST).problem({"meta": {"items": {}}}) is not None


def test_a_mistyped_record_costs_only_itself_and_is_named():
    """A real run's records, one callable's index forged: that record alone is dropped and
    named; the real callable and an unknown record name pass."""
    records = read_records(REAL)
    real = next(r for r in records if r["name"] == "compiled_callable")
    forged = copy.deepcopy(real)
    forged["meta"].update(index="zero", name="forged")
    unknown = {"name": "unknown_to_every_feature", "compile_id": None, "t": 0, "payload": None,
               "meta": {"anything": 1}}
    errors: list[dict] = []
    kept = typed_records(records + [forged, unknown], errors)
    assert forged not in kept and real in kept and unknown in kept
    assert errors == [{"compile_id": None, "step": "compiled_callable",
                       "stage": "compiled_callable", "message":
                       "a compiled_callable record was dropped: its meta field 'index' is not "
                       "integer (calls)"}]
    result = build_result(records + [forged, unknown], USER_FILE)
    assert [c["name"] for c in result["compiled_callables"]] == [real["meta"]["name"]]
    assert result["stage_errors"] == errors
