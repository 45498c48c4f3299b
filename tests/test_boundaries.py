"""The architecture, held by tests: who may import what, and how big a module may grow.

- `app/`, `bench/` and the `torchbolt` command use the engine only through its facade
  (`from compiler_core import X`, X in `compiler_core.__all__`);
- the engine's caller side (`supervisor/`) and its report (`report/`) never import the job
  process's code (`runtime/`), and never torch; `import compiler_core` / `import app` load no torch;
- the engine never imports Flask; no module in `compiler_core/`, `app/` or `static/js/` is over
  400 lines;
- the engine's packages stand in layers (`LAYERS`): each imports only its own layer and those
  below it, and no module is in an import cycle.
"""

from __future__ import annotations

import ast
import glob
import os
import subprocess
import sys
import sysconfig

import pytest

import compiler_core

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 400


def python_files(*folders: str) -> list[str]:
    return sorted(path for folder in folders
                  for path in glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True))


def imported_modules(path: str) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) of every import in a file, relative ones resolved."""
    package = os.path.relpath(os.path.dirname(path), ROOT).replace(os.sep, ".")
    out = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out.append((base, [alias.name for alias in node.names]))
    return out


FACADE_USERS = python_files("app", "bench") + [os.path.join(ROOT, "torchbolt.py")]


@pytest.mark.parametrize("path", FACADE_USERS, ids=lambda p: os.path.relpath(p, ROOT))
def test_app_and_bench_use_only_the_facade(path):
    for module, names in imported_modules(path):
        if module == "compiler_core.__main__" and path.endswith("torchbolt.py"):
            continue  # the command dispatches to the engine's CLI
        assert not module.startswith("compiler_core."), f"{path} imports {module}"
        if module == "compiler_core":
            assert set(names) <= set(compiler_core.__all__), f"{path} imports {names}"


def test_every_facade_name_has_a_caller():
    """`compiler_core.__all__` lists only what app/, bench/ or the command import."""
    used = {name for path in FACADE_USERS for module, names in imported_modules(path)
            if module == "compiler_core" for name in names}
    assert set(compiler_core.__all__) - used == set()


@pytest.mark.parametrize("side", ["supervisor", "cluster", "report", "features", "parsers",
                                  "present"])
def test_caller_side_and_report_never_import_the_job_runtime(side):
    for path in python_files(f"compiler_core/{side}"):
        for module, _ in imported_modules(path):
            assert not module.startswith("compiler_core.runtime"), f"{path} imports {module}"
            assert module.split(".")[0] != "torch", f"{path} imports {module}"


# The engine's packages and top modules, lowest first. The job process (`runtime`) and the caller
# side (`supervisor`) share a layer and never import each other; the Redis path (`cluster`) runs
# jobs through the caller side.
LAYERS = (("limits", "compile_ids"), ("errors", "options", "fairness"), ("wire",), ("parsers",),
          ("features",), ("report",), ("gallery",), ("gpu_gallery", "catalogue"), ("present",),
          ("runtime", "supervisor"), ("cluster",), ("notebook", "__main__"), ("__init__",))
LAYER_OF = {unit: index for index, units in enumerate(LAYERS) for unit in units}


def engine_modules() -> dict[str, str]:
    return {os.path.relpath(p, ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__"): p
            for p in python_files("compiler_core")}


def engine_imports(modules: dict[str, str], path: str) -> set[str]:
    """The engine modules a file imports (`from pkg import module` names the module)."""
    found = set()
    for module, names in imported_modules(path):
        submodules = {f"{module}.{name}" for name in names} & modules.keys()
        found |= submodules or ({module} & modules.keys())
    return found


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_engine_package_has_a_layer():
    assert {unit_of(m) for m in engine_modules()} == set(LAYER_OF)


def test_engine_packages_import_only_their_layer_and_below():
    modules = engine_modules()
    for name, path in modules.items():
        unit = unit_of(name)
        for target in engine_imports(modules, path):
            other = unit_of(target)
            assert LAYER_OF[other] < LAYER_OF[unit] or other == unit, f"{name} imports {target}"


def test_no_engine_module_is_in_an_import_cycle():
    modules = engine_modules()
    graph = {name: engine_imports(modules, path) - {name} for name, path in modules.items()}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import cycle: {' -> '.join(path[path.index(name):] + (name,))}"
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, path + (name,))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())


def test_engine_never_imports_flask():
    for path in python_files("compiler_core"):
        for module, _ in imported_modules(path):
            assert module.split(".")[0] not in ("flask", "app", "waitress"), f"{path}: {module}"


def test_importing_the_packages_loads_no_torch():
    modules = [os.path.relpath(p, ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__")
               for p in python_files("compiler_core/supervisor", "compiler_core/report",
                                     "compiler_core/features", "compiler_core/parsers",
                                     "compiler_core/present", "compiler_core/cluster")]
    code = ("import sys, importlib\n"
            f"for name in {['compiler_core', 'app', 'torchbolt', *modules]!r}:\n"
            "    importlib.import_module(name)\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton'))\n"
            "print(loaded[:5])\n"
            "sys.exit(1 if loaded else 0)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def page_modules() -> list[str]:
    return sorted(glob.glob(os.path.join(ROOT, "static", "js", "**", "*.js"), recursive=True))


@pytest.mark.parametrize("path", python_files("compiler_core", "app") + page_modules(),
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_no_module_over_400_lines(path):
    with open(path, encoding="utf-8") as fh:
        lines = sum(1 for _ in fh)
    assert lines <= MAX_LINES, f"{os.path.relpath(path, ROOT)} has {lines} lines"


def test_the_torchbolt_command_has_serve_and_run():
    """The console script `pip install` put beside this interpreter (PATH may not list it)."""
    command = os.path.join(sysconfig.get_path("scripts"), "torchbolt")
    out = subprocess.run([command, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "serve" in out.stdout and "run" in out.stdout
    run = subprocess.run([command, "run", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0 and "--device" in run.stdout, run.stderr
    serve = subprocess.run([command, "serve", "--help"], capture_output=True, text=True,
                           timeout=60)
    assert serve.returncode == 0 and "--port" in serve.stdout, serve.stderr


def test_the_checkouts_venv_runs_this_checkouts_torchbolt():
    """scripts/setup.sh installs into the checkout's own .venv, never the system Python: its
    `torchbolt` command runs this checkout's code, whichever checkout set up last elsewhere."""
    venv = os.path.join(ROOT, ".venv")
    if not os.path.isdir(venv):
        pytest.skip("scripts/setup.sh has not built this checkout's .venv")
    code = "import torchbolt, compiler_core, app; print(torchbolt.__file__, compiler_core.__file__, app.__file__)"
    out = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], cwd="/",
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert all(path.startswith(ROOT + os.sep) for path in out.stdout.split()), out.stdout
    with open(os.path.join(venv, "bin", "torchbolt")) as fh:
        assert fh.readline().strip() == f"#!{venv}/bin/python"
