"""Graph-break ids from the installed torch's registry (`torch/_dynamo/graph_break_registry.json`):
a break whose message gives no link still gets its id, looked up by its `gb_type` there; the
reference is PyTorch's own lookup (`exc.get_gbid_documentation_link`), in this process."""

from __future__ import annotations

import os

from torch._dynamo import exc

from compiler_core.features.breaks import parse_break, registry_id
from compiler_core.wire import read_records

HERE = os.path.dirname(os.path.abspath(__file__))
USER_FILE = "/work/main/compiler_core/gallery/01_print_graph_break.py"


def pytorch_id(gb_type: str) -> str | None:
    link = exc.get_gbid_documentation_link(gb_type)
    return link.rpartition("/gb/")[2].removesuffix(".html").upper() if link else None


def recorded_break() -> str:
    records = read_records(os.path.join(HERE, "data", "print_graph_break.records.jsonl"))
    return next(r["payload"] for r in records if r["name"] == "dynamo_graph_break_reason")


def test_a_break_without_a_link_gets_its_id_from_the_registry():
    payload = recorded_break()
    linked = parse_break(payload, USER_FILE)
    unlinked = parse_break("\n".join(line for line in payload.split("\n")
                                     if "https://" not in line), USER_FILE)
    assert linked["url"] and unlinked["url"] is None
    assert unlinked["gb_code"] == linked["gb_code"] == pytorch_id(linked["gb_type"])


def test_every_unambiguous_gb_type_maps_to_pytorchs_id():
    """Over the whole installed registry: where a gb_type names one id, it is PyTorch's."""
    registry = exc._load_gb_type_to_gb_id_map()
    assert len(registry) > 400  # 523 gb_types in 2.13.0, 601 in 2.15.0
    for gb_type in registry:
        assert registry_id(gb_type) in (pytorch_id(gb_type), None), gb_type
    assert sum(registry_id(t) is not None for t in registry) > 400


def test_a_gb_type_under_two_ids_or_none_gets_no_id():
    """PyTorch calls the id of a gb_type listed under two ids undefined: none is shown."""
    assert registry_id("bad device argument to torch.get_device_module") is None
    assert registry_id("Not a graph break PyTorch knows") is None


def chained_break_message() -> str:
    """PyTorch's own text of a break raised while handling another (`exc.unimplemented` with
    `from_exc`): the first break's message, its link included, then the second's."""
    try:
        exc.unimplemented(gb_type="Failed to trace builtin operator", context="print",
                          explanation="first", hints=[])
    except exc.Unsupported as first:
        try:
            exc.unimplemented(gb_type="Data-dependent branching", context="if", explanation="second",
                              hints=[], from_exc=first)
        except exc.Unsupported as second:
            assert second.gb_type == "Data-dependent branching"
            return str(second)
    raise AssertionError("unimplemented did not raise")


def test_a_chained_break_has_the_id_and_link_of_the_break_it_names():
    message = chained_break_message()
    assert message.count("https://") == 2  # each break's own link
    payload = (f"Graph break in user code at {USER_FILE}:17\nGraph Break Reason: {message}\n\n"
               f"User code traceback:\n\nTraceback (most recent call last):\n"
               f"torch._dynamo.exc.Unsupported: {message}\n")
    reason_only = payload.partition("User code traceback:")[0]  # a log without the exception
    for brk in (parse_break(payload, USER_FILE), parse_break(reason_only, USER_FILE)):
        assert brk["gb_type"] == "Data-dependent branching"
        assert brk["gb_code"] == pytorch_id(brk["gb_type"])
        assert brk["url"] == exc.get_gbid_documentation_link(brk["gb_type"])
