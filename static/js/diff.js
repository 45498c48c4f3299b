// Line diff of two stage texts (pure: no DOM). Lines are paired by a longest common
// subsequence; for FX graphs a pair whose only difference is node names counts as unchanged.
//
// FX names nodes by what they are and by order (`mul`, `mul_1`, `l_x_`, symbols `s77`), so the
// same graph traced again may name its nodes differently. Each line's *skeleton* replaces the
// names the graph defines (forward's parameters, the left side of assignments) with one
// placeholder; lines are paired on their skeletons, and a pair is a rename when its names map
// one to one onto the other side's, consistently with every earlier pair (`mul` is `mul_2`
// everywhere). Otherwise the pair is a change.

const PLACEHOLDER = "\u00a7";
const FORWARD = /^\s*def forward\(self(.*)\):/;
const PARAMETER = /, (\w+)(?=: "|,|$)/g; // forward's parameter names (annotations skipped)
const ASSIGNED = /^\s+(\w+)(?:: "[^"]*")? = /;
const IDENTIFIER = /(?<![.\w])[A-Za-z_]\w*/g; // not an attribute (`.mul`), not inside a word
const MAX_CELLS = 25_000_000; // LCS table cells (2 bytes each) beyond which lines are not paired

// The names an FX graph's code defines.
export function definedNames(lines) {
  const names = new Set();
  for (const line of lines) {
    const forward = line.match(FORWARD);
    if (forward) for (const m of forward[1].matchAll(PARAMETER)) names.add(m[1]);
    const assigned = line.match(ASSIGNED);
    if (assigned) names.add(assigned[1]);
  }
  return names;
}

const isComment = (line) => line.trimStart().startsWith("#");

// The defined names a line uses, in order (none on comment lines: `# File: ... code: ...`).
function namesIn(line, names) {
  if (isComment(line)) return [];
  return [...line.matchAll(IDENTIFIER)].map((m) => m[0]).filter((word) => names.has(word));
}

function skeleton(line, names) {
  if (isComment(line) || !names.size) return line;
  return line.replace(IDENTIFIER, (word) => (names.has(word) ? PLACEHOLDER : word));
}

// Index pairs [i, j] of a longest common subsequence of two string arrays.
export function lcsPairs(a, b) {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
  const pairs = [];
  for (let i = 0; i < start; i++) pairs.push([i, i]);
  const n = endA - start;
  const m = endB - start;
  if (n && m && (n + 1) * (m + 1) <= MAX_CELLS) {
    // lengths[i][j]: LCS length of a[start+i..endA) and b[start+j..endB), capped at 65535.
    const width = m + 1;
    const lengths = new Uint16Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lengths[i * width + j] = a[start + i] === b[start + j]
          ? Math.min(65535, lengths[(i + 1) * width + j + 1] + 1)
          : Math.max(lengths[(i + 1) * width + j], lengths[i * width + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (a[start + i] === b[start + j]) { pairs.push([start + i, start + j]); i++; j++; }
      else if (lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) i++;
      else j++;
    }
  }
  for (let k = 0; k < a.length - endA; k++) pairs.push([endA + k, endB + k]);
  return pairs;
}

// Whether two lines with equal skeletons differ only by names that map one to one, consistently
// with `forward` (left name -> right name) and `backward`; on success the new mappings are kept.
function sameUpToNames(left, right, names, forward, backward) {
  const from = namesIn(left, names[0]);
  const to = namesIn(right, names[1]);
  if (from.length !== to.length) return false;
  const added = new Map();
  for (let k = 0; k < from.length; k++) {
    const [x, y] = [from[k], to[k]];
    const known = forward.get(x) ?? added.get(x);
    if (known !== undefined ? known !== y : backward.has(y)) return false;
    added.set(x, y);
  }
  for (const [x, y] of added) { forward.set(x, y); backward.set(y, x); }
  return true;
}

// Changed lines (1-based) of each side, and how many paired lines differ only by node names.
export function diffLines(leftText, rightText, { fx = false } = {}) {
  const left = leftText.split("\n");
  const right = rightText.split("\n");
  const names = fx ? [definedNames(left), definedNames(right)] : [new Set(), new Set()];
  const pairs = lcsPairs(left.map((l) => skeleton(l, names[0])), right.map((l) => skeleton(l, names[1])));
  const changed = [new Set(left.map((_, i) => i + 1)), new Set(right.map((_, i) => i + 1))];
  const forward = new Map();
  const backward = new Map();
  let renamed = 0;
  for (const [i, j] of pairs) {
    if (!sameUpToNames(left[i], right[j], names, forward, backward)) continue;
    changed[0].delete(i + 1);
    changed[1].delete(j + 1);
    if (left[i] !== right[j]) renamed++;
  }
  return { left: changed[0], right: changed[1], renamed };
}
