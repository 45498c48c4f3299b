// Long file paths in stage texts (FX's `# File: /tmp/torchbolt-job-x1y2/main.py:12 in f, ...`,
// a sandboxed job's `/job/main.py`, torch's own files) shown short: the user's file by its name,
// a package's file from its package on (`torch/nn/modules/linear.py`). Pure: it returns ranges;
// the viewer hides the folders and keeps the full path on hover, and copying keeps the full text.

// Also torch's cut form in guard comments (`# ob/main.py:6`: `shorten_filename` keeps what
// follows the common path with torch's own folder, "/", less one character).
const PATH = /(?<![\w.])(?:\/[\w.+@-]+)+\/[\w.+@-]+\.py\b|(?<=# )[\w.+@-]+(?:\/[\w.+@-]+)+\.py(?=:\d)/g;
const PACKAGES = /\/(?:site|dist)-packages\//;

// [{from, to, hide, path}]: `path` spans text[from, to); text[from, from + hide) is not shown.
export function shortPaths(text) {
  const out = [];
  for (const match of text.matchAll(PATH)) {
    const path = match[0];
    const packages = path.match(PACKAGES);
    const hide = packages ? packages.index + packages[0].length : path.lastIndexOf("/") + 1;
    out.push({ from: match.index, to: match.index + path.length, hide, path });
  }
  return out;
}

// A path as the page shows it: the user's script (the job runs it as `/job/main.py`) by its
// name, any other path as it is.
export function shownPath(path, userFile) {
  return path && path === userFile ? path.slice(path.lastIndexOf("/") + 1) : path;
}
