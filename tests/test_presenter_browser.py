"""A speaker's run through the page (issue 24), in headless Chromium at projector sizes: every
lesson in presenter mode with nothing left "Loading", nothing wider than the window and the
lesson card's buttons in one place (what a room noticed besides: tests/test_room_browser.py).

Lessons are compiled once per session (the server's store answers them after that).
Screenshots go to test-artifacts/presenter_*.png.
"""

from __future__ import annotations

import contextlib
import re
import time

import pytest

from compiler_core import list_lessons
from compiler_core.gallery.lessons import FIRST
from test_browser import pane, shot

pytest_plugins = ["test_app_fixtures"]

FINISHED = "#run[data-status=done], #run[data-status=failed]"
NOTHING_LOADING = """() => ![...document.querySelectorAll('.pane-body')]
    .some((body) => body.textContent.startsWith('Loading'))"""


# A refused event stream or expensive request is the server's protocol, not a page error: the
# page polls instead (README, "Serving a meetup room"); the session's earlier browser tests may
# still hold this client's stream slots (a closed stream frees its slot at the next heartbeat).
REFUSED = "the server responded with a status of 429"


def no_runs_left(app, timeout=180):
    """Wait until this machine's client (127.0.0.1: every browser test's page) has no submit
    queued or running: the first visits of earlier tests' pages leave lesson runs that count
    toward the client's limit of 2, so the walk's first submit could be a 429."""
    manager = app.extensions["torchbolt.runs"]
    deadline = time.monotonic() + timeout
    while manager.live_count("127.0.0.1") and time.monotonic() < deadline:
        time.sleep(0.2)


@contextlib.contextmanager
def opened(browser, url, width=1280, height=720):
    """A fresh browser (no draft, no settings) at this size on `url`; no page error allowed."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and REFUSED not in m.text
            and problems.append(f"console: {m.text}"))
    page.set_default_timeout(30_000)
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    yield page
    context.close()
    assert not problems


def box(page, selector):
    return page.locator(selector).bounding_box()


def lesson_state(page):
    """What the speaker's test checks on each lesson, measured in the page."""
    return page.evaluate("""() => {
        const place = (sel) => { const r = document.querySelector(sel).getBoundingClientRect();
                                 return [Math.round(r.x), Math.round(r.y)]; };
        const inside = (inner, outer) => { const i = inner.getBoundingClientRect(), o = outer.getBoundingClientRect();
                                           return i.width > 0 && i.left >= o.left - 1 && i.right <= o.right + 1; };
        return {
            step: document.querySelector('.lesson-step').textContent,
            next: place('.lesson-next'), previous: place('.lesson-prev'), close: place('.lesson-close'),
            overflow: document.documentElement.scrollWidth - innerWidth,
            saveInside: [...document.querySelectorAll('.pane')].every((p) => inside(p.querySelector('.download'), p)),
            backticks: document.querySelector('.lesson-text').textContent.includes('`'),
            textHidden: (({ scrollHeight, clientHeight }) => scrollHeight - clientHeight)(document.querySelector('.lesson-text')),
        };
    }""")


# What a lesson step's scene puts on screen, measured in the page: each pane's compile, stage,
# view and diff side; the run panel's tab; whether each spot the text points at (spots.js's
# table), each UI label the text quotes and each point it is about (lessons.py's `points`) is
# visible in the window, not only in the DOM, and the font size of the spots and points.
SCENE_SHOWN = """async ([spots, quoted, points]) => {
    const READ = '.lesson-text, .lesson-text code, .cm-line, .census, .kernel-list li *, .guards li *';
    const { SPOTS } = await import('/static/js/spots.js');
    // Inside the window and every box that clips it (its top 20 px for a tall element).
    const shown = (el) => { const r = el?.getBoundingClientRect();
        if (!r?.width || !r.height || getComputedStyle(el).visibility === 'hidden') return false;
        const bottom = r.height > innerHeight / 3 ? r.top + 20 : r.bottom;
        const within = (b) => r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && bottom <= b.bottom + 1;
        const clips = [];
        for (let a = el.parentElement; a; a = a.parentElement) if (getComputedStyle(a).overflow !== 'visible') clips.push(a);
        return within({ left: 0, top: 0, right: innerWidth, bottom: innerHeight })
            && clips.every((a) => within(a.getBoundingClientRect())); };
    const label = (el) => (el.tagName === 'SELECT' ? el.selectedOptions[0]?.text ?? '' : el.textContent);
    const leaves = [...document.querySelectorAll('#workspace *')].filter((el) => !el.closest('#lesson')
        && el.tagName !== 'OPTION' && (el.tagName === 'SELECT' || !el.children.length));
    const font = (el) => parseFloat(getComputedStyle(el).fontSize);
    // A point: the innermost elements of its place holding its text; is one of them shown, how large?
    const point = ({ text, place }) => {
        const root = document.querySelector(place === 'editor' ? '#editor' : `.pane[data-index="${place}"] .pane-body`);
        const holders = [...root.querySelectorAll('*')].filter((el) => el.textContent.includes(text)
            && ![...el.children].some((child) => child.textContent.includes(text)));
        const seen = holders.filter(shown);
        return { shown: seen.length > 0, font: seen.length ? Math.min(...seen.map(font)) : 0 };
    };
    const tab = document.querySelector('[role=tab][aria-selected=true]').dataset.tab;
    return {
        panes: [...document.querySelectorAll('.pane')].map((p) => ({
            compile: p.querySelector('.pane-compile').value, stage: p.dataset.stage,
            first: [...p.querySelector('.pane-compile').options].map((o) => o.value)
                .find((id) => id.includes('/')) ?? null,  // the result's first compile
            view: p.dataset.view, diff: p.dataset.diff ?? '' })),
        tab, tabShown: shown(document.querySelector(`.tab-panel.${tab}`)),
        spots: Object.fromEntries(spots.map((name) => [name, shown(document.querySelector(SPOTS[name]))])),
        spotFonts: Object.fromEntries(spots.map((name) => [name, font(document.querySelector(SPOTS[name]))])),
        points: points.map((p) => ({ ...p, ...point(p) })),
        readFont: Math.min(...[...document.querySelectorAll(READ)].filter(shown).map(font)),
        quoted: Object.fromEntries(quoted.map((term) => [term,
            leaves.some((el) => label(el).includes(term) && shown(el))])),
    };
}"""


READABLE_PX = 18  # a projector's smallest text at 1280x720 (issue 41)


def check_scene(page, step, present=True):
    """The step's scene is on screen: panes, tab, spots, every “quoted” UI label and every
    point the step is about; in presenter mode its text, spots and points are readable."""
    quoted = re.findall("“(.+?)”", step.text)
    points = [{"text": point.text, "place": point.place} for point in step.points]
    shown = page.evaluate(SCENE_SHOWN, [list(step.spots), quoted, points])
    sides = {pane.diff for pane in step.panes if pane.diff is not None}
    for index, (want, got) in enumerate(zip(step.panes, shown["panes"], strict=True)):
        compile = got["first"] if want.compile == FIRST else want.compile  # its id varies by torch
        assert compile and (got["compile"], got["stage"]) == (compile, want.stage), (index, got)
        assert want.view is None or got["view"] == want.view, (index, got)
        assert got["diff"] == ("new" if want.diff is not None else "old" if index in sides else ""), got
    assert shown["tab"] == step.tab and shown["tabShown"], shown
    assert all(shown["spots"].values()) and all(shown["quoted"].values()), (step.text, shown)
    assert all(point["shown"] for point in shown["points"]), (step.text, shown["points"])
    if present:
        fonts = [shown["readFont"], *(point["font"] for point in shown["points"]),
                 *(size for name, size in shown["spotFonts"].items() if name != "break_mark")]
        assert min(fonts) >= READABLE_PX, (step.text, shown)
    return shown


def toolbar_rows(page):
    """The top bar's visible controls: their rows (one: no two are stacked), and the boxes."""
    return page.evaluate("""() => {
        const boxes = [...document.querySelectorAll('.topbar > *')].filter((el) => el.getBoundingClientRect().height)
            .map((el) => { const r = el.getBoundingClientRect(); return [el.id || el.className, r.top, r.bottom]; });
        return [Math.min(...boxes.map((b) => b[2])) > Math.max(...boxes.map((b) => b[1])) ? 1 : 2, boxes];
    }""")


def walk(lessons):
    """(lesson number, step number, step) through every lesson's steps, in order."""
    return [(index, number, step) for index, (lesson, _) in enumerate(lessons)
            for number, step in enumerate(lesson.steps)]


@pytest.mark.parametrize("width,height", [(1280, 720), (1920, 1080)])
def test_a_speaker_walks_every_lesson_in_presenter_mode(browser, app, live_server, width, height):
    """Each step of each lesson sets its scene once the lesson's result is shown, and what its
    text names is on screen; Next (a click, or Alt+N) goes through the steps, then on."""
    no_runs_left(app)
    lessons = list_lessons()
    path = walk(lessons)
    seen = []
    with opened(browser, f"{live_server}/?present=1", width, height) as page:  # opens on lesson 1
        assert page.locator(".pane").count() == 2
        assert page.get_attribute("#present", "aria-pressed") == "true"
        assert page.is_hidden("#options") and page.is_hidden("#env")  # the run's, not the talk's
        rows, boxes = toolbar_rows(page)
        assert rows == 1, boxes
        for at, (index, number, step) in enumerate(path):
            page.wait_for_selector(f"body[data-scene='{lessons[index][0].slug} {number}']",
                                   timeout=180_000)
            page.wait_for_function(NOTHING_LOADING, timeout=30_000)
            check_scene(page, step)
            state = lesson_state(page)
            assert state["step"] == f"Lesson {index + 1} of {len(lessons)}"
            assert state["overflow"] <= 0, state
            assert state["saveInside"], state  # pane headers keep Save
            assert state["close"][1] == state["next"][1], state  # the close button does not wrap
            assert not state["backticks"], state  # `code` is shown as code
            assert state["textHidden"] <= 1, state  # the whole step is read without scrolling
            seen.append((tuple(state["next"]), tuple(state["previous"])))
            if width == 1280:
                shot(page, f"presenter_lesson_{index + 1}_{number + 1}")
            if at + 1 == len(path):
                break
            if width == 1280:
                page.click(".lesson-next")
            else:
                page.keyboard.press("Alt+KeyN")  # the key for the next step
        page.keyboard.press("Alt+KeyP")
        index, number, _ = path[-2]
        page.wait_for_selector(f"body[data-scene='{lessons[index][0].slug} {number}']")
    assert len(set(seen)) == 1, seen  # Next and Previous never move
