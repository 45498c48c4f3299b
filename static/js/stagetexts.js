// Stage texts on demand. A running job's result comes as an index (`compile.indexed`: each
// stage without its text, each kernel without its source); a pane asks for the part it shows,
// once per (compile, stage, size), and is re-rendered when it arrives. A whole result passes
// through untouched.

import { api } from "./api.js";

const KERNELS = "kernels"; // the stage built from a compile's kernel list (report/index.py)

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

  // `compile` with the whole part of `stage`; null while that part loads. An absent stage, or
  // a compile that is not an index, comes back as it is.
  complete(compile, stage) {
    if (!compile?.indexed || !this.where) return compile;
    const kernels = stage === KERNELS;
    const summary = kernels ? compile.kernels : compile.stages?.[stage];
    if (!summary || (kernels && !summary.length)) return compile;
    const size = kernels ? summary.map((k) => k.size).join(",") : summary.size;
    const key = `${compile.id}|${stage}|${size}`;
    if (!this.parts.has(key)) this.load(key, compile.id, stage);
    const part = this.parts.get(key);
    if (!part) return null;
    return kernels ? { ...compile, kernels: part.kernels }
      : { ...compile, stages: { ...compile.stages, [stage]: part.artifact } };
  }

  async load(key, compileId, stage) {
    const where = this.where;
    this.parts.set(key, null);
    try {
      const part = await api.stage(where, compileId, stage);
      if (where !== this.where) return;
      this.parts.set(key, part);
    } catch {
      if (where !== this.where) return;
      this.parts.delete(key); // asked again at the next render (the next poll)
      return;
    }
    this.onLoaded();
  }
}
