#!/usr/bin/env bash
# The whole test suite: installs what it needs (scripts/setup.sh), then runs pytest in this
# checkout's venv (exit 5, no tests, fails too); then the engine tests again under the second
# torch (scripts/second_torch.sh), in its venv. About 25 minutes on 2 cores once set up.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. scripts/project_venv.sh
# Both suites run whatever the first one's outcome (a failure in the main suite once hid the second
# torch's tests); the script fails if either failed, pytest's exit 5 (no tests) included.
main_rc=0
# --durations=30: each log lists its 30 slowest steps (bench/results/suite_durations.txt keeps
# a measured before/after with the load it ran under).
"$PROJECT_PYTHON" -m pytest tests -q -p no:cacheprovider --durations=30 "$@" || main_rc=$?
# The page's pure modules (diff, layout, stages, recompiles, paths): Node's own test runner.
echo "== the page's unit tests (node --test tests/js/*.test.mjs)"
node_rc=0
PROJECT_PYTHON="$PROJECT_PYTHON" node --test tests/js/*.test.mjs || node_rc=$?

# The engine under the second torch: capture, every stage, the report and the CLI (no browser
# suites: the page does not depend on torch). Add a test file here when it covers the engine.
# Left out there: the standby interpreters and the CLI's build cache (torchbolt's process model,
# the same in any torch; together ~3 of its ~7 minutes). `python -m pytest` from this folder
# runs this checkout's code (none is installed in that shared venv).
ENGINE_TESTS=(tests/test_engine_gallery.py tests/test_lesson_claims.py tests/test_engine_errors.py
              tests/test_cli.py tests/test_report.py tests/test_result_records.py
              tests/test_provenance.py tests/test_graph_breaks.py tests/test_teaching_capture.py
              tests/test_teaching_guards.py tests/test_triton_ir.py tests/test_torch_versions.py
              tests/test_reference_corpus.py tests/test_calls_truth.py
              tests/test_trace_import_tlparse.py tests/test_missing_stages.py
              tests/test_runtime_wrappers.py tests/test_break_registry.py tests/test_option_names.py
              tests/test_compiled_autograd.py tests/test_precompile.py tests/test_triton_glir.py
              tests/test_compile_ids.py tests/test_kernels_stage.py
              --deselect tests/test_engine_errors.py::test_jobs_in_standby_interpreters_give_the_same_results
              --deselect tests/test_cli.py::test_the_build_cache_is_reused_and_hides_no_stage)
. scripts/second_torch.sh
echo "== the engine tests under torch $SECOND_TORCH ($SECOND_TORCH_VENV)"
second_rc=0
"$SECOND_TORCH_VENV/bin/python" -m pytest "${ENGINE_TESTS[@]}" -q -p no:cacheprovider "$@" \
    || second_rc=$?
echo "== main suite: exit $main_rc; page unit tests: exit $node_rc;" \
     "engine tests under torch $SECOND_TORCH: exit $second_rc"
[ "$main_rc" -eq 0 ] && [ "$node_rc" -eq 0 ] && [ "$second_rc" -eq 0 ]
