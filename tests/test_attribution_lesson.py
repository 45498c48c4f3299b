"""The lesson "What fusion bought you" (gallery/lessons.py) says what its example's attribution
shows: checked on the example run again with its records kept (its profiles taken as not
withheld where the machine was busy: the join is the claim, see tests/test_attribution.py)."""

from __future__ import annotations

import pytest

from compiler_core import list_lessons
from compiler_core.gallery import get_example

SLUG = "inference_no_grad"


@pytest.fixture(scope="module")
def lesson(kept_runs):
    (text,) = [lesson.explanation for lesson, example in list_lessons() if example.slug == SLUG]
    result, quiet = kept_runs(get_example(SLUG).source, "13_inference_no_grad.py")
    assert result["error"] is None, result["error"]
    (timing,) = quiet["timings"]
    return text, timing["attribution"], result["timings"][0]["attribution"]


def test_lesson_what_fusion_bought_you(lesson):
    text, attribution, shown = lesson
    rows = attribution["rows"]
    # the convolution stays a library call, replacing eager's aten::conv2d
    (library,) = [r for r in rows if r["kind"] == "extern"]
    assert [s["name"] for s in library["source"]] == ["extern_kernels.convolution"]
    assert {op["op"] for op in library["eager_ops"]} == {"aten::conv2d"}
    # the BatchNorm's math and the ReLU become one generated kernel
    (fused,) = [r for r in rows if "batch_norm" in r["kernel"] and "relu" in r["kernel"]]
    assert fused["kind"] == "cpp"
    assert {op["op"] for op in fused["eager_ops"]} == {"aten::batch_norm", "aten::relu"}
    # measured times beside each other, the waterfall from eager's call to compiled's
    assert all(r["eager_us"] > 0 and r["compiled_us"] > 0 for r in (library, fused))
    labels = [step["label"] for step in attribution["waterfall"]]
    assert labels[0] == "eager call" and labels[-1] == "compiled call"
    assert "fusion (kernels holding several eager ops)" in labels
    outside = next(r for r in rows if r["kind"] == "outside")
    if outside["eager_us"] and outside["compiled_us"]:  # neither side's outside time clamped
        assert any(label.startswith("outside kernels") for label in labels)
    # a kernel slower than its eager ops is marked with what was measured
    assert all(r["slower"].startswith(f"took {r['compiled_us']:.1f} µs per call against")
               for r in rows if r["slower"])
    # the page shows the attribution, or why it is withheld
    assert "rows" in shown or shown["withheld"].startswith("The profiles are not a breakdown")
    for said in ("aten::conv2d", "extern_kernels.convolution", "aten::batch_norm", "aten::relu",
                 "one generated kernel", "waterfall", "marked"):
        assert said in text
