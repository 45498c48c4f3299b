"""Provenance to the metal: every lowered stage's lines trace back to the user's lines, on real
torch on CPU with the H200 preview (one run shared by every test here, see `preview_job`)."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["test_app_fixtures"]

# Each op on its own line: sin 4, cos 5, mul 6, add 7.
SOURCE = '''import torch

def f(x):
    a = torch.sin(x)
    b = torch.cos(x)
    c = a * 2
    return c + b

torch.compile(f)(torch.randn(64))
'''
OP_LINES = {4, 5, 6, 7}
LOWERED = ("ir_pre_fusion", "ir_post_fusion", "output_code", "triton_ttir", "triton_ttgir",
           "triton_llir", "triton_ptx", "triton_sass")
ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "test-artifacts")


@pytest.fixture(scope="session")
def preview_job(compiled):
    job = compiled(SOURCE, device="cpu", gpu_preview=True, measure=False)
    assert job["result"]["error"] is None and not job["result"]["stage_errors"], job["result"]
    return job


@pytest.fixture(scope="session")
def compile_(preview_job):
    (compile_,) = preview_job["result"]["compiles"]
    return compile_


def user_lines(artifact: dict, index: int) -> list[int]:
    first = artifact["src_lines"][index]
    return [] if first is None else [first, *artifact.get("src_more", {}).get(str(index), [])]


def lines_with(artifact: dict, needle: str) -> list[int]:
    return [i for i, line in enumerate(artifact["text"].split("\n")) if needle in line]


@pytest.mark.parametrize("stage", LOWERED)
def test_every_lowered_stage_maps_its_lines_to_the_ops_lines_only(compile_, stage):
    artifact = compile_["stages"][stage]
    mapped = [set(user_lines(artifact, i)) for i in range(len(artifact["src_lines"]))]
    assert sum(1 for lines in mapped if lines) >= 3, stage
    assert set().union(*mapped) <= OP_LINES and len(set().union(*mapped)) >= 2, stage


def test_sin_and_cos_in_ttir_map_to_exactly_their_lines(compile_):
    ttir = compile_["stages"]["triton_ttir"]
    (sin,), (cos,) = lines_with(ttir, "math.sin"), lines_with(ttir, "math.cos")
    assert user_lines(ttir, sin) == [4] and user_lines(ttir, cos) == [5]
    # TTIR, PTX and SASS meet at the kernel source line that wrote the sine.
    key = ttir["kernel_src"][sin]
    kernel, _, number = key.rpartition(":")
    (source,) = [k["source"] for k in compile_["gpu_preview"]["kernels"] if k["label"] == kernel]
    assert "tl_math.sin(" in source.split("\n")[int(number) - 1]
    for stage in ("triton_ttgir", "triton_llir", "triton_ptx", "triton_sass"):
        artifact = compile_["stages"][stage]
        linked = [i for i, k in enumerate(artifact["kernel_src"]) if k == key]
        assert linked and all(user_lines(artifact, i) == [4] for i in linked), stage


def test_generated_code_maps_each_op_to_its_line(compile_):
    """The CPU's C++ kernel line by line, and the call that launches it: all four lines."""
    code = compile_["stages"]["output_code"]
    for needle, line in ((".sin()", 4), (".cos()", 5)):
        assert {user_lines(code, i)[0] for i in lines_with(code, needle)} == {line}, needle
    (launch,) = [i for i in lines_with(code, "cpp_fused_") if "(arg0_1" in code["text"].split(
        "\n")[i]]
    assert sorted(user_lines(code, launch)) == [4, 5, 6, 7]


def test_loop_ir_maps_each_op_to_its_origins(compile_):
    ir = compile_["stages"]["ir_post_fusion"]
    (op,) = lines_with(ir, "op0: SchedulerNode")
    assert sorted(user_lines(ir, op)) == [4, 5, 6, 7]


def test_preview_kernels_stage_shows_triton_sources_and_the_cuda_module(compile_):
    preview = compile_["gpu_preview"]
    (kernel,) = preview["kernels"]
    assert kernel["kind"] == "triton" and "@triton.jit" in kernel["source"]
    assert sorted(kernel["lines"]) == [4, 5, 6, 7] and "sin" in kernel["nodes"]
    source = kernel["source"].split("\n")
    (cos,) = [i for i, line in enumerate(source) if "tl_math.cos(" in line]
    assert kernel["src_lines"][cos] == 5 and str(cos) not in kernel["src_more"]
    module = preview["module"]
    assert "triton_heuristics" in module["text"] and "empty_strided_cuda" in module["text"]
    (launch,) = lines_with(module, f"{kernel['name']}.run(")
    assert sorted(user_lines(module, launch)) == [4, 5, 6, 7]


def click_line(page, pane: int, index: int, text: str) -> None:
    """Scroll a pane's viewer to its 0-based line `index` (CodeMirror renders only the lines in
    view) and click that line."""
    scroller = f".pane[data-index='{pane}'] .cm-scroller"
    page.evaluate("""([sel, index]) => {
        const scroller = document.querySelector(sel);
        const height = scroller.querySelector('.cm-line').getBoundingClientRect().height;
        scroller.scrollTop = Math.max(0, index * height - 100); }""", [scroller, index])
    page.locator(f"{scroller} .cm-line").filter(has_text=text.strip()).first.click()


def test_clicking_a_ptx_line_selects_its_user_line_and_links_the_other_panes(
        browser, live_server, preview_job, compile_):
    ptx = compile_["stages"]["triton_ptx"]
    lines = ptx["text"].split("\n")
    index = next(i for i, line in enumerate(lines) if user_lines(ptx, i) == [5]
                 and lines.count(line) == 1 and ".loc" not in line)
    context = browser.new_context(viewport={"width": 1600, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server}/r/{preview_job['key']}")
    page.wait_for_selector("body[data-ready]")
    page.keyboard.press("Alt+Digit3")
    for pane, stage in enumerate(("triton_ptx", "triton_ttir", "kernels")):
        page.select_option(f".pane[data-index='{pane}'] .pane-stage", stage)
    click_line(page, 0, index, lines[index])
    page.wait_for_function("() => document.querySelector('#editor .cm-activeLine')"
                           "?.textContent.includes('torch.cos(x)')")
    linked = page.locator(".pane[data-index='1'] .cm-line.tb-link").all_inner_texts()
    assert linked and any("math.cos" in text for text in linked), linked
    kernel_lines = page.locator(".pane[data-index='2'] .cm-line.tb-link").all_inner_texts()
    assert any("tl_math.cos" in text for text in kernel_lines), kernel_lines
    assert page.locator(".pane[data-index='2'] .kernel-list .kernel-jump").count() == 1
    os.makedirs(ARTIFACTS, exist_ok=True)
    page.screenshot(path=os.path.join(ARTIFACTS, "provenance_ptx_click.png"))
    context.close()
    assert not errors
