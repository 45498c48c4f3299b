// The toolbar's run options, from the engine's catalogue: a select per choice, a checkbox per
// switch. A select whose choices include "auto" shows its name too ("device: auto": "auto"
// alone would not say what it is); in presenter mode every select does ("mode: default"), so
// that a room can read what each menu sets. A menu whose default a script's own torch.compile
// argument beat in the shown result is marked, its title naming the call (`markOverrides`).

import { h } from "./dom.js";
import { ownArguments } from "./calls.js";
import { pageOptions } from "./settings.js";

function optionControl(option, store) {
  const { name, label, help } = option;
  const settings = store.state;
  const save = (value) => store.set({ options: { ...settings.options, [name]: value } });
  if (option.kind === "bool") {
    const box = h("input", { type: "checkbox", name, checked: settings.options[name],
                             onchange: () => save(box.checked) });
    return h("label", { class: "check", title: help, dataset: { help } }, box, ` ${label}`);
  }
  const select = h("select", { name, "aria-label": label, title: help, onchange: () => save(select.value),
                               dataset: { label, help, prefixed: option.choices.includes("auto") ? "1" : "" } },
    option.choices.map((c) => h("option", { value: c, selected: settings.options[name] === c }, c)));
  return select;
}

// Each select's choices as "name: value" (`labelled`, or where a choice is "auto") or as "value".
export function labelOptions(form, labelled) {
  for (const select of form.querySelectorAll("select[data-label]")) {
    const prefix = labelled || select.dataset.prefixed ? `${select.dataset.label}: ` : "";
    for (const option of select.options) option.textContent = `${prefix}${option.value}`;
  }
}

export function buildOptions(form, catalogue, store) {
  const options = pageOptions(catalogue);
  // Selects first, then the switches, as the toolbar always had them.
  form.append(...["choice", "bool"].flatMap((kind) =>
    options.filter((o) => o.kind === kind).map((o) => optionControl(o, store))));
}

export function setOptions(form, store, options) {
  for (const [name, value] of Object.entries(options)) {
    if (!(name in store.state.options)) continue;
    store.set({ options: { ...store.state.options, [name]: value } });
    const field = form.querySelector(`[name="${name}"]`);
    if (field?.type === "checkbox") field.checked = value;
    else if (field) field.value = value;
  }
}

// Marks each control whose option a compiled callable's own torch.compile argument overrode in
// `result` (its `overrides`), and says in its title which call set what: the menu's value did
// not apply to that call. Cleared for a result without such a call.
export function markOverrides(form, result) {
  for (const field of form.querySelectorAll("[name]")) {
    const control = field.type === "checkbox" ? field.closest("label") : field;
    const by = (result?.compiled_callables ?? []).filter((c) => c.overrides?.includes(field.name));
    control.classList.toggle("overridden", by.length > 0);
    control.title = [control.dataset.help, ...by.map((c) =>
      `Overridden for ${c.name}${c.line ? ` (line ${c.line})` : ""}: ${ownArguments(c, result.options)}`)]
      .filter(Boolean).join("\n");
  }
}
