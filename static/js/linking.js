// Lines of a stage linked to the user's lines and to each other, from the artifact's fields:
// `src_lines[i]` (the first user line of output line i), `src_more[i]` (the others) and
// `kernel_src[i]` ("KERNEL:N", the kernel source line a line of a Triton stage, a kernel or the
// generated module stands for). Doc lines here are 1-based, as CodeMirror's.

// The user lines output line `line` came from, first first.
export function userLinesOf(artifact, line) {
  const first = artifact.src_lines?.[line - 1];
  return first == null ? [] : [first, ...(artifact.src_more?.[String(line - 1)] ?? [])];
}

// The doc lines that came from any of the user lines in `users` (a Set).
export function linesOfUsers(artifact, users) {
  const lines = new Set();
  if (!users.size) return lines;
  (artifact.src_lines ?? []).forEach((first, i) => {
    if (first == null) return;
    if (users.has(first) || (artifact.src_more?.[String(i)] ?? []).some((u) => users.has(u))) lines.add(i + 1);
  });
  return lines;
}

export function kernelKeyOf(artifact, line) {
  return artifact.kernel_src?.[line - 1] ?? null;
}

// The doc lines that stand for the kernel source line `key`.
export function linesOfKey(artifact, key) {
  const lines = new Set();
  if (key) (artifact.kernel_src ?? []).forEach((k, i) => { if (k === key) lines.add(i + 1); });
  return lines;
}
