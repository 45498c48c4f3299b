// The lesson path (boot.lessons: the gallery's examples in the lecture's order, each with a
// short explanation). The Examples menu lists the lessons first; the open lesson's card sits
// above the editor with Previous / Next (Alt+P / Alt+N). Opening a lesson loads its script and compiles it
// (a server answers the lessons it ran before from its store at once).

import { h, clear } from "./dom.js";

export class Lessons {
  constructor(card, menu, { lessons, gallery }, { onOpen }) {
    Object.assign(this, { card, menu, lessons, onOpen });
    this.sources = new Map(gallery.map((example) => [example.slug, example]));
    this.current = null;
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

  open(slug) {
    if (!this.example(slug)) return;
    this.show(slug);
    this.onOpen(this.example(slug).source);
  }

  // The lesson `delta` steps from the open one (Alt+N / Alt+P); from none, the first.
  step(delta) {
    const index = this.lessons.findIndex((lesson) => lesson.slug === this.current);
    const next = this.lessons[index < 0 ? 0 : index + delta];
    if (next) this.open(next.slug);
  }

  // The card of lesson `slug` (null: no card). Its buttons sit at its top right, in a row of
  // their own width, so that they stay in place from lesson to lesson; the text scrolls below.
  show(slug) {
    const index = this.lessons.findIndex((lesson) => lesson.slug === slug);
    this.current = index >= 0 ? slug : null;
    this.card.hidden = index < 0;
    if (index < 0) return clear(this.card);
    const lesson = this.lessons[index];
    const step = (delta) => this.lessons[index + delta];
    const button = (cls, delta, label, key) => h("button", { class: cls, disabled: !step(delta),
      title: step(delta) ? `${step(delta).concept} (${key})` : null, onclick: () => this.step(delta) }, label);
    clear(this.card,
      h("div", { class: "lesson-head" },
        h("div", { class: "lesson-title" },
          h("span", { class: "lesson-step" }, `Lesson ${index + 1} of ${this.lessons.length}`), " ",
          h("strong", { class: "lesson-concept" }, lesson.concept)),
        h("div", { class: "lesson-nav" },
          button("lesson-prev", -1, "◀ Previous", "Alt+P"), button("lesson-next", 1, "Next ▶", "Alt+N"),
          h("button", { class: "lesson-close", title: "Close the lesson", "aria-label": "Close the lesson",
                        onclick: () => this.show(null) }, "×"))),
      h("p", { class: "lesson-text" }, withCode(lesson.explanation)));
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
