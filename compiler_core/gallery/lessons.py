"""The lesson path: the gallery examples in the order of the "graph mode" lecture, one per
concept, each with a short explanation of what it shows and where to look on the page.

A lesson names its example by slug; a lesson whose example is missing is left out, so the
path only ever lists scripts that exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import Example, list_examples


@dataclass(frozen=True)
class Lesson:
    concept: str
    slug: str  # the gallery example it runs
    explanation: str


LESSONS = (
    Lesson("Tracing vs scripting vs Dynamo", "trace_script_compile",
           "torch.jit.trace records the ops one input happened to run, so an `if` on a tensor "
           "is baked in (and it warns); torch.jit.script compiles the Python source itself and "
           "keeps both branches as prim::If. Dynamo reads the bytecode as it runs: it captures "
           "everything up to the `if`, breaks the graph there, lets Python decide the branch, "
           "and traces the branch taken into a second graph. Open \u201cjit.trace\u201d and "
           "\u201cjit.script\u201d in the compile picker beside the Dynamo graphs."),
    Lesson("Guards and recompiles", "recompile_on_shape_change",
           "Each compiled graph is stored with guards: checks on its inputs (shapes, dtypes, "
           "globals) that must hold for the graph to be reused. The second call has another "
           "batch size, so a size guard fails and Dynamo compiles again, now with the size "
           "as a symbol. Click \u201c\u21c6 guards\u201d or \u201c\u21c6 graphs\u201d on the "
           "recompile row: the failed guard is marked in 0/0's guards."),
    Lesson("Graph breaks and resume functions", "print_graph_break",
           "Dynamo cannot put print() into a graph, so it ends the graph before it, runs the "
           "print in plain Python, and continues in a generated resume function "
           "(torch_dynamo_resume_in_f_at_N) that it compiles as a new frame, 1/0. The gutter "
           "mark and the Graph breaks tab give PyTorch's reason and its GB code."),
    Lesson("The guard cache serves later calls", "dynamic_shapes",
           "A compile is paid once; later calls only run the guards of the cache entries and "
           "jump to the compiled code of the first entry whose guards hold. With dynamic=True "
           "the sizes are symbols, and the symbolic guards (Guards stage) say which shapes "
           "this graph accepts. The script calls it again with (4, 16) and (100, 32): the "
           "Calls tab shows both calls as hits of 0/0, and there is still one compile."),
    Lesson("IR narrowing: Torch IR \u2192 ATen \u2192 Core ATen \u2192 prims", "softmax_layernorm",
           "Dynamo's graph holds two torch-level calls (softmax, layer_norm). Core ATen, the "
           "fixed operator set a backend must support, keeps both as single operators "
           "(_softmax, native_layer_norm): that view stays small. Inductor decomposes further "
           "with its own table, so the ATen graph it received (AOT inference) is already "
           "reductions and pointwise math, and prims go below even that. The ops line under "
           "each compile counts the nodes of each graph."),
    Lesson("A custom backend receives the FX graph", "custom_backend",
           "A backend is any function taking the FX GraphModule Dynamo captured and example "
           "inputs, and returning something callable. This one prints the graph's nodes (the "
           "Output tab) and runs the graph as captured: the Dynamo stages are there, and no "
           "AOTAutograd or Inductor stages follow, since neither ran."),
    Lesson("Fusion", "mlp_fusion",
           "Inductor keeps the matrix multiplies as library calls and fuses the pointwise work "
           "around them (bias, GELU, residual add) into a few generated loops, so the "
           "intermediate tensors never travel through memory. Compare the post-grad graph's "
           "nodes with the handful of kernels in the Kernels stage."),
    Lesson("Export (AOT) beside the JIT", "export_vs_compile",
           "torch.compile is just in time: it captures graphs as the code runs, guarded for the "
           "inputs it saw, and may split a function at graph breaks. torch.export (ahead of "
           "time) captures the whole function as one graph with its signature (parameters "
           "become inputs) and the range of each dynamic size, or fails. Open "
           "\u201cexport\u201d in the compile picker beside the compile's Dynamo graph."),
    Lesson("JIT vs AOT: AOTInductor beside torch.compile", "jit_vs_aot",
           "torch.compile is just in time: the first call traces, compiles and runs, inside "
           "Python (its Generated code is a Python wrapper). AOTInductor compiles the exported "
           "program ahead of time into a package: a C++ wrapper and its kernels, built into a "
           "shared library. Loading the package and its first call cost less than the JIT's "
           "first call: no start-up latency, no Python. Open \u201cexport\u201d in the picker: "
           "its AOTInductor stages and the measured JIT vs AOT table."),
)


def list_lessons() -> list[tuple[Lesson, Example]]:
    """The lesson path, in order, each lesson with its example (missing examples left out)."""
    examples = {example.slug: example for example in list_examples()}
    return [(lesson, examples[lesson.slug]) for lesson in LESSONS if lesson.slug in examples]
