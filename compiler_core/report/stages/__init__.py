"""Stage extractors: each module turns one compile's records into artifacts of one shape.

A module defines `STAGES` (the stage names it may produce) and `extract(compile_records)`.
"""

from . import aot, bytecode, decomp, dynamo, guards, inductor, metrics, triton_ir

MODULES = (bytecode, dynamo, guards, aot, decomp, inductor, metrics, triton_ir)
STAGE_NAMES = tuple(name for module in MODULES for name in module.STAGES)

# Which stage a record announces, for progress lines and live events.
RECORD_STAGE = {
    "bytecode": "bytecode", "dynamo_output_graph": "dynamo_graph",
    "dynamo_cpp_guards_str": "guards", "dynamo_graph_break_reason": "graph_break",
    "recompile_reasons": "recompile", "aot_joint_graph": "aot_joint",
    "aot_forward_graph": "aot_forward", "aot_backward_graph": "aot_backward",
    "aot_inference_graph": "aot_inference", "core_aten": "core_aten", "prims": "prims",
    "inductor_post_grad_graph": "post_grad_graph", "ir_pre_fusion": "ir_pre_fusion",
    "ir_post_fusion": "ir_post_fusion", "inductor_output_code": "output_code",
    "compilation_metrics": "metrics", "triton_kernel": "triton_ir", "gpu_preview": "gpu_preview",
}
