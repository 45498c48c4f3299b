"""The lesson path: the gallery examples in the order of the "graph mode" lecture, one per
concept, each explained in steps: a passage of text and the scene it talks about (the panes,
the run panel's tab, what to scroll into view), which the page sets as the speaker steps through.

A lesson names its example by slug; a lesson whose example is missing is left out, so the
path only ever lists scripts that exist.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from . import Example, list_examples


@dataclass(frozen=True)
class Pane:
    """A pane of a scene: one stage of a compile ("0/1") or of a program ("trace-0", "export-0").
    FIRST names the result's first compile by what it is, where its id depends on the torch
    version (from 2.15 torch.export's own Dynamo frame takes a frame number: a later compile's
    first id is 1/0, not 0/0)."""
    compile: str
    stage: str
    view: str | None = None  # "text", "graph", "grouped" ...; None: the stage's first view
    diff: int | None = None  # the pane this one is diffed against (changed lines marked)


FIRST = "first"  # Pane.compile: the result's first compile (the page's layout.js resolves it)


def compile_id(pane: Pane, result: dict) -> str | None:
    """The id of the compile or program `pane` shows in `result` (FIRST resolved)."""
    if pane.compile == FIRST:
        return result["compiles"][0]["id"] if result.get("compiles") else None
    return pane.compile


@dataclass(frozen=True)
class Point:
    """What a step's text is about, as the page shows it: `text` in pane 0 or 1 (a line of its
    code, or an item of a list such as the kernels' or the grouped guards') or in the editor
    (place "editor": a line of the script). The page scrolls each into view; the browser test
    finds it there, at a readable size."""
    text: str
    place: int | str  # a pane's index, or "editor"


@dataclass(frozen=True)
class Step:
    """A passage of a lesson's text and the scene it talks about, which the page sets once the
    lesson's result is shown: two panes, the run panel's tab, and `spots`, the things the text
    points at (named in static/js/spots.js), scrolled into view and outlined. A UI label the
    text names is in “quotes”; the browser test finds each one on screen."""
    text: str
    panes: tuple[Pane, Pane]
    tab: str = "compiles"  # the run panel's: compiles, calls, breaks, output
    spots: tuple[str, ...] = ()
    points: tuple[Point, ...] = ()

    def scene(self) -> dict:
        return {"panes": [asdict(pane) for pane in self.panes], "tab": self.tab,
                "spots": list(self.spots), "points": [asdict(point) for point in self.points]}


@dataclass(frozen=True)
class Lesson:
    concept: str
    slug: str  # the gallery example it runs
    steps: tuple[Step, ...]  # Next / Previous go through them before the next lesson

    @property
    def explanation(self) -> str:
        return " ".join(step.text for step in self.steps)


LESSONS = (
    Lesson("Tracing vs scripting vs Dynamo", "trace_script_compile", (
        Step("torch.jit.trace records the ops one input happened to run, so an `if` on a tensor "
             "is baked in, and it warns (the TracerWarning under \u201cOutput\u201d); "
             "torch.jit.script compiles the Python source itself and keeps both branches (its "
             "`if` is a prim::If). The panes show \u201cjit.trace\u201d and \u201cjit.script\u201d.",
             (Pane("trace-0", "torchscript_code"), Pane("script-1", "torchscript_code")),
             tab="output", spots=("stderr",),
             points=(Point("traced = torch.jit.trace(f, x)", "editor"), Point("if bool(", 1))),
        Step("Dynamo reads the bytecode as it runs: it captures everything up to the `if` (0/0), "
             "breaks the graph there, lets Python decide the branch, and traces the branch taken "
             "into a second graph, 1/0.",
             (Pane("0/0", "dynamo_graph"), Pane("1/0", "dynamo_graph")), spots=("graph_break",),
             points=(Point("if x.sum() > 0:", "editor"),)),
    )),
    Lesson("Guards and recompiles", "recompile_on_shape_change", (
        Step("Each compiled graph is stored with guards: checks on its inputs (shapes, dtypes, "
             "globals) that must hold for the graph to be reused; 0/0's \u201cGuards\u201d "
             "check the exact sizes of x.",
             (Pane("0/0", "guards"), Pane("0/0", "dynamo_graph")),
             points=(Point("out = compiled(torch.randn(8, 16))", "editor"), Point("size=[8, 16]", 0))),
        Step("The second call has another batch size, so a size guard fails and Dynamo compiles "
             "again (the recompile row). Its \u201c\u21c6 guards\u201d diffs 0/0's guards with "
             "0/1's: the failed guard is marked.",
             (Pane("0/0", "guards", "text"), Pane("0/1", "guards", "text", diff=0)),
             spots=("recompile", "failed_guard"),
             points=(Point("out = compiled(torch.randn(4, 16))", "editor"),)),
        Step("Its \u201c\u21c6 graphs\u201d diffs the two graphs: 0/0's constant 8 is a size "
             "symbol in 0/1, so later batch sizes reuse it.",
             (Pane("0/0", "dynamo_graph", "text"), Pane("0/1", "dynamo_graph", "text", diff=0)),
             spots=("recompile",), points=(Point("return torch.relu(x) * x.shape[0]", "editor"),)),
    )),
    Lesson("Graph breaks and resume functions", "print_graph_break", (
        Step("Dynamo cannot put print() into a graph, so it ends the graph before it (0/0), runs "
             "the print in plain Python, and continues in a generated resume function "
             "(torch_dynamo_resume_in_f_at_N) that it compiles as a new frame, 1/0.",
             (Pane("0/0", "dynamo_graph"), Pane("1/0", "dynamo_graph")), spots=("graph_break",),
             points=(Point('print("inside f, between the two graphs")', "editor"),)),
        Step("The gutter mark at the print and the \u201cGraph breaks\u201d tab give PyTorch's "
             "reason and its GB code.",
             (Pane("0/0", "dynamo_graph"), Pane("1/0", "dynamo_graph")), tab="breaks",
             spots=("break_mark", "break_card"),
             points=(Point('print("inside f, between the two graphs")', "editor"),)),
    )),
    Lesson("The guard cache serves later calls", "dynamic_shapes", (
        Step("A compile is paid once; later calls only run the guards of the cache entries and "
             "jump to the compiled code of the first entry whose guards hold. With dynamic=True "
             "the sizes are symbols, and the symbolic \u201cGuards\u201d say which shapes this "
             "graph accepts.",
             (Pane("0/0", "guards"), Pane("0/0", "dynamo_graph")),
             points=(Point("compiled = torch.compile(f, dynamic=True)", "editor"),
                     Point("2 <= L['x'].size()[0]", 0))),
        Step("The script calls it again with (4, 16) and (100, 32): \u201cCalls\u201d lists both "
             "as hits of 0/0, and there is still one compile.",
             (Pane("0/0", "guards"), Pane("0/0", "dynamo_graph")), tab="calls", spots=("calls",),
             points=(Point("compiled(torch.randn(100, 32))", "editor"),)),
    )),
    Lesson("IR narrowing: Torch IR \u2192 ATen \u2192 Core ATen \u2192 prims", "softmax_layernorm", (
        Step("Dynamo's graph holds two torch-level calls (softmax, layer_norm). \u201cCore "
             "ATen\u201d, the fixed operator set a backend must support, keeps both as single "
             "operators (_softmax, native_layer_norm): that view stays small.",
             (Pane("0/0", "dynamo_graph"), Pane("0/0", "core_aten")),
             points=(Point("return F.layer_norm(probs, (16,), weight, bias)", "editor"),
                     Point("native_layer_norm", 1))),
        Step("Inductor decomposes further with its own table, so the ATen graph it received "
             "(\u201cAOT inference\u201d) is already reductions and pointwise math, and "
             "\u201cPrims\u201d go below even that. The ops line under the compile counts the "
             "nodes of each graph.",
             (Pane("0/0", "aot_inference"), Pane("0/0", "prims")), spots=("census",),
             points=(Point("probs = torch.softmax(x, dim=-1)", "editor"),)),
    )),
    Lesson("A custom backend receives the FX graph", "custom_backend", (
        Step("A backend is any function taking the FX GraphModule Dynamo captured and example "
             "inputs, and returning something callable. This one prints the graph's nodes "
             "(\u201cOutput\u201d) and runs the graph as captured.",
             (Pane("0/0", "dynamo_graph"), Pane("0/0", "guards")), tab="output",
             spots=("stdout",), points=(Point("for node in gm.graph.nodes:", "editor"),)),
        Step("The compile's row lists its Dynamo stages, and no AOTAutograd or Inductor stages "
             "follow, since neither ran: there are no kernels. Dynamo's \u201cTransformed "
             "bytecode\u201d calls what the backend returned (__compiled_fn_N).",
             (Pane("0/0", "dynamo_graph"), Pane("0/0", "bytecode_transformed")), spots=("compile_row",),
             points=(Point("compiled = torch.compile(f, backend=my_backend)", "editor"),
                     Point("__compiled_fn", 1))),
    )),
    Lesson("Fusion", "mlp_fusion", (
        Step("Inductor keeps the matrix multiplies as library calls and generates loops for the "
             "LayerNorm, the GELU and the residual add. Compare the \u201cInductor post-grad "
             "graph\u201d's nodes with the handful of \u201cKernels\u201d.",
             (Pane("0/0", "post_grad_graph"), Pane("0/0", "kernels")), spots=("kernel_list",),
             points=(Point("h = F.gelu(self.fc1(h))", "editor"),)),
        Step("Under each kernel, the scheduler's fusion log says why: the LayerNorm's nodes share "
             "data and fused into one kernel; the residual add was refused, \"intermediate nodes "
             "between node1 & node2\" (the matmuls). No decision names the GELU: the scheduler "
             "never offers a library call for fusion, on CPU or CUDA. With "
             "mode=\"max-autotune\" on a GPU the matmul is a Triton template and the GELU fuses "
             "into it.",
             (Pane("0/0", "post_grad_graph"), Pane("0/0", "kernels")),
             points=(Point("return x + self.fc2(h)", "editor"),
                     Point("intermediate nodes between node1 & node2", 1))),
    )),
    Lesson("What fusion bought you", "inference_no_grad", (
        Step("The timings join each compiled kernel to the eager ATen ops it replaced, under "
             "\u201cWhat each compiled kernel replaced, and what it saved\u201d: the convolution "
             "stays a library call (eager's aten::conv2d, compiled extern_kernels.convolution), "
             "and the BatchNorm's per-channel math and the ReLU (eager's aten::batch_norm and "
             "aten::relu) become one generated kernel of the \u201cKernels\u201d beside it.",
             (Pane("0/0", "timings"), Pane("0/0", "kernels")),
             points=(Point("out = compiled(torch.randn(2, 3, 8, 8))", "editor"),
                     Point("What each compiled kernel replaced, and what it saved", 0),
                     Point("extern_kernels.convolution", 1))),
        Step("Each row puts the eager ops' measured time beside the kernel's, from profiles of "
             "the same calls, and the waterfall goes from eager's call to compiled's: what "
             "fusion saved, what the library calls cost and the time outside kernels "
             "(launches, framework, Python). A kernel slower than the eager ops it replaced is "
             "marked, with why from what was measured.",
             (Pane("0/0", "timings"), Pane("0/0", "kernels")),
             points=(Point("cpp_fused__native_batch_norm_legit_no_training_relu", 1),)),
    )),
    Lesson("Export (AOT) beside the JIT", "export_vs_compile", (
        Step("torch.compile is just in time: it captures graphs as the code runs, guarded for the "
             "inputs it saw, and may split a function at graph breaks. torch.export (ahead of "
             "time) captures the whole function as one graph with its signature (parameters "
             "become inputs) and the range of each dynamic size, or fails. The panes show "
             "\u201cexport\u201d beside the compile's \u201cDynamo graph\u201d.",
             (Pane("export-0", "exported_program"), Pane(FIRST, "dynamo_graph")),
             points=(Point('dynamic_shapes={"x": {0: batch}}', "editor"), Point("Range constraints", 0))),
    )),
    Lesson("JIT vs AOT: AOTInductor beside torch.compile", "jit_vs_aot", (
        Step("torch.compile is just in time: the first call traces, compiles and runs, inside "
             "Python (its \u201cGenerated code\u201d is a Python wrapper). AOTInductor compiles "
             "the exported program ahead of time into a package: a C++ wrapper and its kernels, "
             "built into a shared library.",
             (Pane("0/0", "output_code"), Pane("export-0", "aoti_wrapper")),
             points=(Point("jit = torch.compile(model)", "editor"),
                     Point("AOTInductorModel::run_impl", 1))),
        Step("Loading the package and its first call cost less than the JIT's first call: no "
             "start-up latency, no Python. The measured \u201cJIT vs AOT\u201d table sits "
             "above the package's stages.",
             (Pane("0/0", "output_code"), Pane("export-0", "aoti_kernels")), spots=("aoti_table",),
             points=(Point("package = torch._inductor.aoti_compile_and_package(program)", "editor"),)),
    )),
)


def list_lessons() -> list[tuple[Lesson, Example]]:
    """The lesson path, in order, each lesson with its example (missing examples left out)."""
    examples = {example.slug: example for example in list_examples()}
    return [(lesson, examples[lesson.slug]) for lesson in LESSONS if lesson.slug in examples]
