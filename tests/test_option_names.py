"""The names torchbolt hands to the installed torch exist there, under each torch it supports
(run under 2.13 and 2.15): the page's torch.compile arguments and their choices, and every
Inductor, functorch and Dynamo config key the job sets (runtime/config.py, read from its source).
torch 2.15 renamed one Inductor option (`benchmark_epilogue_fusion`, now a deprecated alias of
`benchmark_template_fusion`); none of these names is deprecated (an alias that is not, like
`force_disable_caches` of `torch.compiler.config`'s, is PyTorch's own spelling)."""

from __future__ import annotations

import ast
import inspect
import os

import torch
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config

from compiler_core.options import SPECS
from compiler_core.runtime.callables import PAGE_ARGUMENTS

CONFIG_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compiler_core",
                         "runtime", "config.py")
CONFIGS = {"inductor_config": inductor_config, "functorch_config": functorch_config,
           "torch._dynamo.config": torch._dynamo.config}


def dotted(node: ast.expr) -> str:
    return f"{dotted(node.value)}.{node.attr}" if isinstance(node, ast.Attribute) else node.id


def keys_set() -> list[tuple[str, str]]:
    """(config module, key) of each `<config>.<key> = ...` in runtime/config.py."""
    with open(CONFIG_PY) as f:
        tree = ast.parse(f.read())
    found = []
    for node in ast.walk(tree):
        for target in getattr(node, "targets", []):
            if isinstance(target, ast.Attribute):
                name = dotted(target)
                root = next((r for r in CONFIGS if name.startswith(r + ".")), None)
                if root:
                    found.append((root, name[len(root) + 1:]))
    return found


def test_the_pages_torch_compile_arguments_and_choices_exist_in_this_torch():
    assert set(PAGE_ARGUMENTS) <= set(inspect.signature(torch.compile).parameters)
    assert set(SPECS["mode"].choices) <= set(torch._inductor.list_mode_options())
    assert set(SPECS["backend"].choices) <= set(torch._dynamo.list_backends(exclude_tags=()))


def test_every_config_key_the_job_sets_exists_here_under_its_own_name():
    keys = keys_set()
    assert ("inductor_config", "benchmark_combo_kernel") in keys and len(keys) >= 8
    for root, key in keys:
        entry = CONFIGS[root]._config.get(key)
        assert entry is not None, f"{root}.{key} is not in torch {torch.__version__}"
        assert not entry.deprecated, f"{root}.{key}: {entry.deprecation_message}"


def test_a_renamed_option_would_be_caught():
    """torch 2.15's renamed option, as the check above reads it."""
    entry = inductor_config._config["benchmark_epilogue_fusion"]
    assert entry.deprecated == (torch.__version__ >= (2, 15))
