// What names a compile in the compile menus and the run panel: the frame Dynamo compiled, or, for
// a compile of no frame (compiled autograd's `!0`: the backward graph it traced when the script
// called backward(), which Dynamo then compiles as a frame of its own, `!0/…`), the stage it holds.

import { stageList } from "./stages.js";

export function isUserFrame(compile, userFile) {
  return !compile?.frame?.filename || compile.frame.filename === userFile;
}

// Its frame's name in the user's script, else its qualified name (`TransformerEncoder.forward`
// rather than Dynamo's wrapper `inner`); with no frame, its stage's label.
export function frameLabel(compile, userFile) {
  const frame = compile?.frame;
  if (frame?.name) return isUserFrame(compile, userFile) ? frame.name : frame.qualname ?? frame.name;
  return stageList(compile).find(([stage]) => compile?.stages?.[stage])?.[1] ?? "";
}
