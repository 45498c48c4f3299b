"""The lesson path (issue 11, part 9): one gallery example per concept of the lecture, in its
order, each with an explanation; what the page's first visit opens on."""

from __future__ import annotations

import json
import re

from compiler_core import list_examples, list_lessons
from compiler_core.gallery.lessons import LESSONS

pytest_plugins = ["test_app_fixtures"]
CONCEPTS = ["tracing", "guards", "graph breaks", "guard cache", "ir narrowing", "custom backend",
            "fusion", "export", "jit vs aot"]  # the lecture's order


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
    for lesson, example in list_lessons():
        assert 150 <= len(lesson.explanation) <= 600, lesson.concept
        assert lesson.explanation.rstrip().endswith((".", ")")), lesson.concept


def test_the_page_boots_with_the_lessons_in_order(client):
    html = client.get("/").get_data(as_text=True)
    boot = json.loads(re.search(r'<script type="application/json" id="boot">(.*?)</script>', html, re.S)[1])
    assert [(x["slug"], x["concept"]) for x in boot["lessons"]] == \
        [(example.slug, lesson.concept) for lesson, example in list_lessons()]
    assert all(x["explanation"] for x in boot["lessons"])
