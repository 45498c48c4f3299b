// DOM helpers. User text only ever reaches the page through textContent / attributes set here
// (never innerHTML), so it cannot become markup.

export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// Links from results (PyTorch's graph-break docs) are only followed when they are https.
export function safeUrl(url) {
  return typeof url === "string" && /^https:\/\//.test(url) ? url : null;
}

// Text with its https links as links (new tab); the rest stays text. Shown in an element that
// keeps line breaks (class "message"), as PyTorch's multi-line errors need.
const LINK = /https:\/\/[^\s<>"')\]]+[^\s<>"')\].,;:]/g;
export function linkify(text) {
  const parts = [];
  let at = 0;
  for (const match of String(text ?? "").matchAll(LINK)) {
    parts.push(text.slice(at, match.index),
      h("a", { href: safeUrl(match[0]), target: "_blank", rel: "noopener noreferrer" }, match[0]));
    at = match.index + match[0].length;
  }
  parts.push(String(text ?? "").slice(at));
  return parts;
}

let toastTimer = null;
export function toast(message, ms = 2500) {
  const el = document.getElementById("toast");
  clear(el, message);
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, ms);
}

// navigator.clipboard needs a secure context; http://LAN-IP at a meetup is not one. The toast
// says `message` once the text is copied.
export async function copyText(text, message = "Copied to the clipboard") {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = h("textarea", { class: "offscreen" });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  toast(message, message.length > 40 ? 8000 : 2500);
}

export function download(filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
  const link = h("a", { href: url, download: filename });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function lineLink(line, onLine) {
  return h("button", { class: "line-link", title: `Show line ${line} in the editor`,
                       onclick: () => onLine(line) }, `line ${line}`);
}

// Each cell of a table's full rows carries its column's header (data-label), for a stacked
// layout in a narrow pane ("header: value" a line; app.css) where the header row is hidden.
export function labelled(table) {
  const headers = [...table.rows[0].cells].map((cell) => cell.textContent);
  for (const row of table.rows) {
    if (row.cells.length === headers.length) [...row.cells].forEach((cell, i) => { cell.dataset.label = headers[i]; });
  }
  return table;
}
