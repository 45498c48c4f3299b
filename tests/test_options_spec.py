"""One spec per option: `Options`, the CLI's flags, the API's checks and the page's controls all
derive from `compiler_core.options.OPTIONS`, and the page keeps no copies of labels or lists."""

from __future__ import annotations

import dataclasses
import glob
import json
import os

import pytest

from app.errors import ApiError
from app.validate import parse_options
from compiler_core import Options, OptionsError, catalogue
from compiler_core.__main__ import parse_args
from compiler_core.options import (COMPILE_RULES, OPTIONS, USER_OPTIONS, compile_arguments,
                                  from_flags, option_catalogue)

pytest_plugins = ["test_app_fixtures"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE_FILES = glob.glob(os.path.join(ROOT, "static", "js", "*.js")) + [
    os.path.join(ROOT, "templates", "index.html")]
# Stages the page gives behaviour of its own: default panes, counterparts, views.
# post_grad_graph: the synced graphs say what its passes removed; aot_joint, aot_backward: the
# "Saved for backward" table sits above the training graphs
PAGE_STAGES = {"dynamo_graph", "kernels", "aot_forward", "aot_inference", "guards", "timings",
               "post_grad_graph", "aot_joint", "aot_backward"}
# Error kinds the page gives behaviour of its own: a run its Stop button ended is not the script's
# error (states.js's error strip says the stages shown are those captured until then)
PAGE_ERROR_KINDS = {"Cancelled"}
WRONG_TYPE = {"choice": 1, "bool": "yes", "number": "5"}


def flag(option) -> str:
    return "--" + option.name.replace("_", "-")


def test_options_are_the_specs():
    fields = dataclasses.fields(Options)
    assert [f.name for f in fields] == [o.name for o in OPTIONS]
    assert Options().to_dict() == {o.name: o.default for o in OPTIONS}
    with pytest.raises(dataclasses.FrozenInstanceError):
        Options().device = "cpu"


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.kind == "choice"], ids=lambda o: o.name)
def test_a_choice_outside_the_spec_is_refused(option):
    with pytest.raises(OptionsError, match=f"option '{option.name}' must be one of "
                                           f"{', '.join(option.choices)}; got 'nope'"):
        Options.from_dict({option.name: "nope"})


def test_one_rule_table_decides_where_a_default_mode_fits():
    """`COMPILE_RULES` alone, through `compile_arguments`: a default mode is kept with the
    inductor backend, dropped for another backend or beside options=; the call's own stays."""
    assert [rule.key for rule in COMPILE_RULES] == ["mode"]
    inductor = Options(mode="max-autotune").compile_defaults()
    assert compile_arguments(inductor, {})["mode"] == "max-autotune"
    assert "mode" not in compile_arguments(inductor, {"backend": "eager"})
    assert "mode" not in compile_arguments(inductor, {"options": {"trace.enabled": True}})
    eager = Options(mode="max-autotune", backend="eager").compile_defaults()
    assert "mode" not in compile_arguments(eager, {})
    assert "mode" not in compile_arguments(eager, {"backend": "inductor"})
    assert compile_arguments(eager, {"mode": "reduce-overhead"}) == {
        "backend": "eager", "fullgraph": False, "mode": "reduce-overhead"}


def test_the_cli_parses_its_flags_as_the_api_does():
    with pytest.raises(OptionsError, match="option 'timeout' must be between 1 and 600"):
        from_flags(parse_args(["run", "x.py", "--timeout", "601"]))
    assert from_flags(parse_args(["run", "x.py", "--device", "cpu"])).device == "cpu"


def test_catalogue_lists_exactly_the_user_options():
    listed = option_catalogue()
    assert [o["name"] for o in listed] == [o.name for o in USER_OPTIONS]
    assert {"memory_mb", "cpu_s", "pids", "disk_mb", "output_limit"}.isdisjoint(
        o["name"] for o in listed)
    assert all(o["label"] and o["help"] for o in listed)
    assert json.loads(json.dumps(catalogue()))["options"] == json.loads(json.dumps(listed))
    (timeout,) = [o for o in listed if o["name"] == "timeout"]
    assert (timeout["kind"], timeout["min"], timeout["max"]) == ("number", 1, 600)


def test_cli_flags_come_from_the_specs(capsys):
    with pytest.raises(SystemExit):
        parse_args(["run", "--help"])
    help_text = capsys.readouterr().out
    for option in USER_OPTIONS:
        assert flag(option) in help_text, option.name
        if option.kind == "bool":
            assert f"--no-{flag(option)[2:]}" in help_text
    args = parse_args(["run", "x.py"])
    assert {o.name: getattr(args, o.name) for o in USER_OPTIONS} == {
        o.name: o.default for o in USER_OPTIONS}
    args = parse_args(["run", "x.py", "--fullgraph", "--gpu-preview", "--no-measure",
                       "--device", "cpu", "--timeout", "5"])
    assert (args.fullgraph, args.gpu_preview, args.measure, args.device, args.timeout) == (
        True, True, False, "cpu", 5.0)


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_api_accepts_user_options_only(app, option):
    with app.test_request_context():
        if option.user:
            assert getattr(parse_options({option.name: option.default}), option.name) == option.default
            with pytest.raises(ApiError, match="has the wrong type"):
                parse_options({option.name: WRONG_TYPE[option.kind]})
        else:
            with pytest.raises(ApiError, match=f"unknown option '{option.name}'"):
                parse_options({option.name: option.default})


def test_api_refuses_an_unknown_option(client):
    response = client.post("/api/compile", json={"source": "print(1)\n", "options": {"speed": 11}})
    assert response.status_code == 400
    assert response.get_json()["error"] == (
        f"unknown option 'speed'; allowed: {', '.join(o.name for o in USER_OPTIONS)}")


def test_page_boots_with_the_catalogue(client):
    html = client.get("/").get_data(as_text=True)
    boot = json.loads(html.split('id="boot">')[1].split("</script>")[0])
    assert boot["catalogue"] == json.loads(json.dumps(catalogue()))
    assert {"choices", "graph_stages", "stage_names"}.isdisjoint(boot)


def test_page_code_holds_no_copies_of_the_catalogue():
    """No label, help or meaning text, no list of an option's choices, no error kind, and no
    stage name beyond those the page gives behaviour of its own."""
    cat = catalogue()
    texts = ([s[key] for s in cat["stages"] for key in ("label", "title")]
             + [o[key] for o in cat["options"] for key in ("label", "help")]
             + [k["meaning"] for k in cat["error_kinds"]])
    names = ([f'"{k["kind"]}"' for k in cat["error_kinds"] if k["kind"] not in PAGE_ERROR_KINDS]
             + [f'"{s["name"]}"' for s in cat["stages"] if s["name"] not in PAGE_STAGES])
    for path in PAGE_FILES:
        text = open(path, encoding="utf-8").read()
        assert not [t for t in texts if " " in t and t in text], path
        assert not [n for n in names if n in text], path
        for option in cat["options"]:  # a data value ("cuda", "eager") may appear, not a list
            assert sum(f'"{c}"' in text for c in option.get("choices", ())) < 2, (path, option)
