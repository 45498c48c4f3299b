"""Stage `dynamo_graph`: the FX graph Dynamo captured (Torch IR), as code and as a node table."""

from __future__ import annotations

from ..parsers import names
from ..parsers.common import artifact, fx_src_lines
from .spec import LIST, Feature, Part, Stage, record

SPECS = (Stage("dynamo_graph", "Dynamo graph (Torch IR)", "Dynamo FX graph (Torch IR)", "python",
               records=("dynamo_output_graph",), graph=True),)


def extract(compile_records) -> dict:
    graph = compile_records.first("dynamo_output_graph")
    if graph is None:
        return {}
    text = graph["payload"] or ""
    spec = SPECS[0]
    stage = artifact(spec.name, compile_records.compile_id, spec.title, spec.language, text,
                     fx_src_lines(text, compile_records.user_file))
    nodes = compile_records.first("fx_nodes")
    stage["nodes"] = nodes["meta"]["nodes"] if nodes else []
    return {"dynamo_graph": stage}


def has_graph(group, compiled: dict) -> bool:
    return "dynamo_graph" in compiled["stages"]


FEATURE = Feature(
    "dynamo", records=(record("dynamo_output_graph"), record("fx_nodes", nodes=LIST)),
    stages=SPECS, attach=("runtime.capture:attach_backend_graphs",), extract=extract,
    compile_parts=(Part(None, lambda group, compiled: names.annotate(compiled["stages"]),
                        name="names"),
                   Part("has_graph", has_graph, False)))
