// Readable FX names in the stage viewers: an artifact's `names` (parsers/names.py) maps Dynamo's
// names of lifted parameters (`l_fn_modules_layers_modules_0_parameters_weight_`) to module
// paths (`layers.0.weight`). The viewer shows the short ones; hover and copies give the full.

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

// The text with each full name shortened, and where each short one stands: [{from, to, full}].
export function shortenNames(text, names) {
  const keys = Object.keys(names ?? {}).sort((a, b) => b.length - a.length);
  if (!keys.length) return { text, spans: [] };
  const pattern = new RegExp(`\\b(?:${keys.map(escape).join("|")})\\b`, "g");
  const spans = [];
  let out = "";
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    out += text.slice(last, match.index);
    const short = names[match[0]];
    spans.push({ from: out.length, to: out.length + short.length, full: match[0] });
    out += short;
    last = match.index + match[0].length;
  }
  return { text: out + text.slice(last), spans };
}

// The shown text from `from` to `to` with the full names back (what a copy of it gives).
export function fullNames(shown, from, to, spans) {
  let out = "";
  let at = from;
  for (const span of spans) {
    if (span.to <= from || span.from >= to) continue;
    if (span.from < from || span.to > to) continue; // a name cut by the selection stays as shown
    out += shown.slice(at, span.from) + span.full;
    at = span.to;
  }
  return out + shown.slice(at, to);
}
