// The lesson path (boot.lessons: the gallery's examples in the lecture's order, each in steps: a
// passage of its text and the scene it talks about). The Examples menu lists the lessons first;
// the open lesson's card sits above the editor with Previous / Next (Alt+P / Alt+N), which go
// through the steps, then on to the next lesson. Opening a lesson loads its script and compiles
// it (a server answers the lessons it ran before from its store at once); main.js sets the
// step's scene once the result is shown, and at once for a step of the same lesson.

import { h, clear } from "./dom.js";

export class Lessons {
  constructor(card, menu, { lessons, gallery }, { onOpen, onScene }) {
    Object.assign(this, { card, menu, lessons, onOpen, onScene });
    this.sources = new Map(gallery.map((example) => [example.slug, example]));
    this.current = null;
    this.stepIndex = 0;
  }

  example(slug) {
    return this.sources.get(slug) ?? null;
  }

  // Lessons first in the Examples menu, numbered; `pick` closes the menu.
  buildMenu(pick) {
    if (!this.lessons.length) return;
    this.menu.prepend(h("div", { class: "menu-heading" }, "Lessons: the graph-mode lecture, in order"),
      ...this.lessons.map((lesson, i) => h("button", { role: "menuitem", dataset: { lesson: lesson.slug },
        onclick: () => { pick(); this.open(lesson.slug); } },
      h("strong", {}, `${i + 1}. ${lesson.concept}`), h("span", {}, this.example(lesson.slug)?.title ?? "")),
      ), h("div", { class: "menu-heading" }, "All examples"));
  }

  open(slug, step = 0) {
    if (!this.example(slug)) return;
    this.show(slug, step);
    this.onOpen(this.example(slug).source);
  }

  // The open step's scene ({panes, tab, spots} and its `id`, "slug step"); null: none open.
  scene() {
    const lesson = this.lessons.find((l) => l.slug === this.current);
    return lesson ? { ...lesson.steps[this.stepIndex].scene, id: `${lesson.slug} ${this.stepIndex}` } : null;
  }

  // [lesson index, step] `delta` steps from the open one (Alt+N / Alt+P): a step of the same
  // lesson, else the next lesson's first step or the previous one's last; from none, the first.
  neighbour(delta) {
    const index = this.lessons.findIndex((lesson) => lesson.slug === this.current);
    if (index < 0) return [0, 0];
    const step = this.stepIndex + delta;
    if (step >= 0 && step < this.lessons[index].steps.length) return [index, step];
    const other = this.lessons[index + delta];
    return other ? [index + delta, delta < 0 ? other.steps.length - 1 : 0] : null;
  }

  step(delta) {
    const [index, step] = this.neighbour(delta) ?? [];
    const lesson = this.lessons[index];
    if (!lesson) return;
    if (lesson.slug !== this.current) return this.open(lesson.slug, step);
    this.show(lesson.slug, step);
    this.onScene();
  }

  // The card of lesson `slug` at `step` (null: no card). Its buttons sit at its top right, in a
  // row of their own width, so that they stay in place from lesson to lesson; the text scrolls below.
  show(slug, step = 0) {
    const index = this.lessons.findIndex((lesson) => lesson.slug === slug);
    this.current = index >= 0 ? slug : null;
    this.stepIndex = step;
    this.card.hidden = index < 0;
    if (index < 0) return clear(this.card);
    const lesson = this.lessons[index];
    const steps = lesson.steps.length;
    const button = (cls, delta, label, key) => {
      const [to, toStep] = this.neighbour(delta) ?? [];
      const title = to === index ? `Step ${toStep + 1} of ${steps}` : this.lessons[to]?.concept;
      return h("button", { class: cls, disabled: !title, title: title ? `${title} (${key})` : null,
                           onclick: () => this.step(delta) }, label);
    };
    clear(this.card,
      h("div", { class: "lesson-head" },
        h("div", { class: "lesson-title" },
          h("span", { class: "lesson-step" }, `Lesson ${index + 1} of ${this.lessons.length}`), " ",
          steps > 1 ? [h("span", { class: "lesson-part" }, `· step ${step + 1} of ${steps}`), " "] : null,
          h("strong", { class: "lesson-concept" }, lesson.concept)),
        h("div", { class: "lesson-nav" },
          button("lesson-prev", -1, "◀ Previous", "Alt+P"), button("lesson-next", 1, "Next ▶", "Alt+N"),
          h("button", { class: "lesson-close", title: "Close the lesson", "aria-label": "Close the lesson",
                        onclick: () => { this.show(null); this.onScene(); } }, "×"))),
      h("p", { class: "lesson-text" }, withCode(lesson.steps[step].text)));
  }

  // The lesson whose script is `source`, if any (the editor still holds it after a reload).
  slugFor(source) {
    return this.lessons.find((lesson) => this.example(lesson.slug)?.source === source)?.slug ?? null;
  }
}

// Lesson text with its `backticked` spans as code (an unpaired backtick stays as it is).
function withCode(text) {
  const parts = text.split("`");
  if (parts.length % 2 === 0) { const last = parts.pop(); parts[parts.length - 1] += `\`${last}`; }
  return parts.map((part, i) => (i % 2 ? h("code", {}, part) : part));
}
