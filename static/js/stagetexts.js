// Stage texts on demand. A running job's result comes as an index (`compile.indexed`: each
// stage without its text, each kernel without its source); a pane asks for the part it shows,
// once per (compile, stage, summary) and number of the run's timings: a part gains more than
// text once the timings are in (the Kernels stage its measured times), which the job writes
// after the script's last compile, all at once; so a part asked after them is not asked again
// when the run ends. A pane is re-rendered when its part arrives (or failed to: the pane says
// why and offers to ask again). A whole result passes through untouched.

import { api } from "./api.js";

export class StageTexts {
  constructor(onLoaded) {
    this.onLoaded = onLoaded; // a part arrived: render again
    this.where = null; // {handle} or {key}: whose parts these are
    this.parts = new Map(); // key -> part, or null while it loads
  }

  setSource(where) {
    if (JSON.stringify(where) === JSON.stringify(this.where)) return;
    this.where = where;
    this.parts.clear();
  }

  // `compile` of `result` with the whole part of `stage`; null while that part loads or when it
  // failed to (`failure` says why). An absent stage, or a compile that is not an index, comes
  // back as it is.
  complete(compile, stage, result) {
    const key = this.keyOf(compile, stage, result);
    if (key === null) return compile;
    if (!this.parts.has(key)) this.load(key, compile.id, stage);
    const part = this.parts.get(key);
    if (!part || part.error) return null;
    return { ...compile, stages: { ...compile.stages, [stage]: part.artifact } };
  }

  // Why the part of `stage` could not be loaded; null when it loads or came.
  failure(compile, stage, result) {
    return this.parts.get(this.keyOf(compile, stage, result))?.error ?? null;
  }

  // Ask again for the parts that failed.
  retry() {
    for (const [key, part] of this.parts) if (part?.error) this.parts.delete(key);
    this.onLoaded();
  }

  // The part's key (its summary: a running job's part grows; the timings it may show), null when
  // there is nothing to ask.
  keyOf(compile, stage, result) {
    const summary = compile?.indexed && this.where ? compile.stages?.[stage] : null;
    return summary ? `${compile.id}|${stage}|${JSON.stringify(summary)}|${result?.timings?.length ?? 0}` : null;
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
