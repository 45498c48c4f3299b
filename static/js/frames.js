// What names a compile in the compile menus and the run panel: the frame Dynamo compiled, or, for
// a compile of no frame (compiled autograd's `!0`: the backward graph it traced when the script
// called backward(), which Dynamo then compiles as a frame of its own, `!0/…`), the stage it holds.

import { stageList } from "./stages.js";

export function isUserFrame(compile, userFile) {
  return !compile?.frame?.filename || compile.frame.filename === userFile;
}

// Its frame's qualified name, as the job's bytecode hook read it off the code object: a method
// of the script's by its class (`Gate.forward`: its qualified name ends in its name; a code object
// renamed with `replace(co_name=...)` keeps the old one, so it goes by its name), one in library
// code by what it runs (`TransformerEncoder.forward` for Dynamo's module wrapper `inner`). With
// no code object seen (a TORCH_TRACE log) its name; with no frame, its stage's label.
export function frameLabel(compile, userFile) {
  const frame = compile?.frame;
  if (!frame?.name) return stageList(compile).find(([stage]) => compile?.stages?.[stage])?.[1] ?? "";
  const qualifies = frame.qualname?.endsWith(`.${frame.name}`);
  return qualifies || !isUserFrame(compile, userFile) ? frame.qualname ?? frame.name : frame.name;
}
