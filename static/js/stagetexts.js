// Stage texts on demand. A running job's result comes as an index (`compile.indexed`: each
// stage without its text, each kernel without its source); a pane asks for the part it shows,
// once per (compile, stage, size) while the run goes on and once more when it ended (a stage
// may gain more than text at the end: the Kernels stage its measured times), and is
// re-rendered when it arrives (or failed to: the pane says why and offers to ask again). A whole
// result passes through untouched.

import { api } from "./api.js";

export class StageTexts {
  constructor(onLoaded) {
    this.onLoaded = onLoaded; // a part arrived: render again
    this.where = null; // {job} or {key}: whose parts these are
    this.parts = new Map(); // key -> part, or null while it loads
  }

  setSource(where) {
    if (JSON.stringify(where) === JSON.stringify(this.where)) return;
    this.where = where;
    this.parts.clear();
  }

  // `compile` with the whole part of `stage`; null while that part loads or when it failed to
  // (`failure` says why). An absent stage, or a compile that is not an index, comes back as it is.
  // `ended`: the run has ended (its result is final).
  complete(compile, stage, ended) {
    const key = this.keyOf(compile, stage, ended);
    if (key === null) return compile;
    if (!this.parts.has(key)) this.load(key, compile.id, stage);
    const part = this.parts.get(key);
    if (!part || part.error) return null;
    return { ...compile, stages: { ...compile.stages, [stage]: part.artifact } };
  }

  // Why the part of `stage` could not be loaded; null when it loads or came.
  failure(compile, stage, ended) {
    return this.parts.get(this.keyOf(compile, stage, ended))?.error ?? null;
  }

  // Ask again for the parts that failed.
  retry() {
    for (const [key, part] of this.parts) if (part?.error) this.parts.delete(key);
    this.onLoaded();
  }

  // The part's key (its size: a running job's part grows), null when there is nothing to ask.
  keyOf(compile, stage, ended) {
    const summary = compile?.indexed && this.where ? compile.stages?.[stage] : null;
    return summary ? `${compile.id}|${stage}|${summary.size}|${Boolean(ended)}` : null;
  }

  async load(key, compileId, stage) {
    const where = this.where;
    this.parts.set(key, null);
    let part;
    try {
      part = await api.stage(where, compileId, stage);
    } catch (error) {
      part = { error: error.message };
    }
    if (where !== this.where) return;
    this.parts.set(key, part);
    this.onLoaded();
  }
}
