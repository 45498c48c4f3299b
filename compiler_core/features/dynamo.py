"""Stage `dynamo_graph`: the FX graph Dynamo captured (Torch IR), as code and as a node table."""

from __future__ import annotations

from ..parsers import names
from .spec import LIST, Feature, Part, payload_stage, record, traced

SPECS = (payload_stage("dynamo_graph", "Dynamo graph (Torch IR)", "Dynamo FX graph (Torch IR)",
                       "dynamo_output_graph"),)


def add_node_table(group, compiled: dict) -> None:
    """The graph's FX node table, as torchbolt's backend hook saw it (`fx_nodes`)."""
    stage = compiled["stages"].get("dynamo_graph")
    if stage is not None:
        nodes = group.first("fx_nodes")
        stage["nodes"] = nodes["meta"]["nodes"] if nodes else []


def has_graph(group, compiled: dict) -> bool:
    return "dynamo_graph" in compiled["stages"]


FEATURE = Feature(
    "dynamo", records=(traced("dynamo_output_graph"), record("fx_nodes", nodes=LIST)),
    stages=SPECS, attach=("runtime.capture:attach_backend_graphs",),
    compile_parts=(Part(None, add_node_table, name="nodes"),
                   Part(None, lambda group, compiled: names.annotate(compiled["stages"]),
                        name="names"),
                   Part("has_graph", has_graph, False)))
