// The lesson path (boot.lessons: the gallery's examples in the lecture's order, each with a
// short explanation). The Examples menu lists the lessons first; the open lesson's card sits
// above the editor with Previous / Next. Opening a lesson loads its script and compiles it
// (a server answers the lessons it ran before from its store at once).

import { h, clear } from "./dom.js";

export class Lessons {
  constructor(card, menu, { lessons, gallery }, { onOpen, onClose }) {
    Object.assign(this, { card, menu, lessons, onOpen, onClose });
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

  // The card of lesson `slug` (null: no card).
  show(slug) {
    const index = this.lessons.findIndex((lesson) => lesson.slug === slug);
    this.current = index >= 0 ? slug : null;
    this.card.hidden = index < 0;
    if (index < 0) return clear(this.card);
    const lesson = this.lessons[index];
    const step = (delta) => this.lessons[index + delta];
    clear(this.card,
      h("div", { class: "lesson-head" },
        h("span", { class: "lesson-step" }, `Lesson ${index + 1} of ${this.lessons.length}`),
        h("strong", { class: "lesson-concept" }, lesson.concept), h("span", { class: "spacer" }),
        h("button", { class: "lesson-prev", disabled: !step(-1), title: step(-1)?.concept,
                      onclick: () => this.open(step(-1).slug) }, "◀ Previous"),
        h("button", { class: "lesson-next", disabled: !step(1), title: step(1)?.concept,
                      onclick: () => this.open(step(1).slug) }, "Next ▶"),
        h("button", { class: "lesson-close", title: "Close the lesson", "aria-label": "Close the lesson",
                      onclick: () => { this.show(null); this.onClose(); } }, "×")),
      h("p", { class: "lesson-text" }, lesson.explanation));
  }

  // The lesson whose script is `source`, if any (the editor still holds it after a reload).
  slugFor(source) {
    return this.lessons.find((lesson) => this.example(lesson.slug)?.source === source)?.slug ?? null;
  }
}
