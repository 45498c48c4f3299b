"""A big model's result on the page (issue 14): stage texts arrive when a pane shows them, a
compiled nn.Module from torch is named by its method and the user's line, and Dynamo's long
parameter names read as module paths with the full name on hover."""

from __future__ import annotations

from conftest import TINY_ENCODER
from test_browser import open_page, page, pane, run_script, shot  # noqa: F401 (page: a fixture)

pytest_plugins = ["test_app_fixtures"]
CALL_LINE = TINY_ENCODER.splitlines().index("out = encoder(torch.randn(2, 4, 16))") + 1


def test_encoder_result_loads_stage_texts_on_demand(page, live_server, compiled):
    compiled(TINY_ENCODER, measure=False)  # the page's identical submit is served from the store
    stage_requests = []
    page.on("request", lambda r: "/stage?" in r.url and stage_requests.append(r.url))
    open_page(page, live_server + "/")
    if page.is_checked("#options [name=measure]"):
        page.click("#options [name=measure]")
    run_script(page, TINY_ENCODER)

    row = page.locator(".compile-row .frame").first
    assert row.inner_text() == f"TransformerEncoder.forward called at line {CALL_LINE}"
    assert "torch/_dynamo/external_utils.py:" in row.get_attribute("title")  # the real frame

    page.select_option(f"{pane(page, 0)} .pane-stage", "dynamo_graph")
    name = page.wait_for_selector(f"{pane(page, 0)} .tb-name:has-text('layers.0.self_attn.in_proj_bias')")
    assert name.get_attribute("title") == \
        "l_fn_modules_layers_modules_0_modules_self_attn_parameters_in_proj_bias_"
    assert "l_fn_modules_" not in page.inner_text(f"{pane(page, 0)} .cm-content")
    shot(page, "encoder_short_names")
    assert any("stage=dynamo_graph" in url for url in stage_requests)

    page.click(f"{pane(page, 0)} .cm-line >> nth=0")  # the class line: no user line to jump to
    page.keyboard.press("Control+A")
    copied = page.evaluate("""(selector) => {
      const data = new DataTransfer();
      document.querySelector(selector).dispatchEvent(
        new ClipboardEvent("copy", { clipboardData: data, bubbles: true, cancelable: true }));
      return data.getData("text/plain");
    }""", f"{pane(page, 0)} .cm-content")
    assert "l_fn_modules_layers_modules_0_modules_self_attn_parameters_in_proj_bias_" in copied
    assert "layers.0.self_attn.in_proj_bias" not in copied

