// What a GPU warm series' host share says (compiler_core/runtime/measure/clocks.py plan_per_call).
// No DOM, so that node tests read it.

// Host-bound: a call's launches take the host nearly all of the call's time on the device (0.9
// or more; the device waits for them). Results stored before the host's share was recorded used
// the word from half of that: not shown.
export const hostBound = (series) => Boolean(series.host_bound && series.host_share);

// Why a GPU series was sampled over a longer span: the host's share of its calls.
export function longSpanNote(series) {
  if (!series.long_span) return "";
  const share = Math.max(...Object.values(series.host_share));
  return `\nLaunching a call takes the host ${(100 * share).toFixed(0)} % of its time on the device, ` +
    "and the host's speed drifts: sampled over a longer span.";
}
