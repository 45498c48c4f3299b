"""The lesson path (issue 11, part 9): one gallery example per concept of the lecture, in its
order, each with an explanation; what the page's first visit opens on."""

from __future__ import annotations

import json
import re

from compiler_core import catalogue, list_examples, list_lessons
from compiler_core.gallery.lessons import LESSONS

pytest_plugins = ["test_app_fixtures"]
CONCEPTS = ["tracing", "guards", "graph breaks", "guard cache", "ir narrowing", "custom backend",
            "fusion", "fusion", "export", "jit vs aot"]  # the lecture's order


def test_every_lesson_runs_an_existing_example_once():
    slugs = {example.slug for example in list_examples()}
    assert [lesson.slug for lesson in LESSONS if lesson.slug in slugs] == \
        [lesson.slug for lesson, _ in list_lessons()] == [lesson.slug for lesson in LESSONS]
    assert len({lesson.slug for lesson in LESSONS}) == len(LESSONS)


def test_the_lessons_follow_the_lecture():
    concepts = [lesson.concept.lower() for lesson, _ in list_lessons()]
    assert len(concepts) == len(CONCEPTS)
    assert all(word in concept for word, concept in zip(CONCEPTS, concepts)), concepts


def test_each_lesson_explains_itself_briefly():
    """Briefly: a step is what the card shows at once, at most three lines of 18 px text at
    1280x720 (the presenter walk checks none of it is hidden)."""
    for lesson, example in list_lessons():
        assert len(lesson.explanation) >= 150, lesson.concept
        assert all(len(step.text) <= 400 for step in lesson.steps), lesson.concept
        assert lesson.explanation.rstrip().endswith((".", ")")), lesson.concept


def test_each_step_sets_stages_the_engine_has():
    """The browser test (test_presenter_browser.py) checks each scene on screen; an unknown
    stage would be dropped there as a share link's would, so it is caught here by name."""
    stages = {stage["name"] for stage in catalogue()["stages"]}
    for lesson, _ in list_lessons():
        for step in lesson.steps:
            assert {pane.stage for pane in step.panes} <= stages, step.text
            assert all(pane.diff in (None, *range(len(step.panes))) for pane in step.panes)


def test_the_page_boots_with_the_lessons_in_order(client):
    html = client.get("/").get_data(as_text=True)
    boot = json.loads(re.search(r'<script type="application/json" id="boot">(.*?)</script>', html, re.S)[1])
    assert [(x["slug"], x["concept"]) for x in boot["lessons"]] == \
        [(example.slug, lesson.concept) for lesson, example in list_lessons()]
    assert all(x["explanation"] for x in boot["lessons"])
    assert [[step["scene"]["panes"][0]["stage"] for step in x["steps"]] for x in boot["lessons"]] == \
        [[step.panes[0].stage for step in lesson.steps] for lesson, _ in list_lessons()]
