#!/usr/bin/env bash
# The full CI, which .ci/run runs, in a fresh clone (CI=true, no stdin), on 2
# cores within 90 minutes (about 20 minutes measured, docs/fuzzing.md):
#   1. scripts/test.sh: the README's test command (setup, build, lit on test/);
#   2. scripts/test-sanitizers.sh: build-asan (clang-22, ASan + UBSan on every
#      vortex target) and the whole lit suite under it;
#   3. scripts/fuzz.sh: the fuzz target for a fixed number of executions
#      with a fixed seed, one process (deterministic: the same inputs every
#      run, so CI cannot fail at random), at most 600 s; any crash,
#      sanitizer report, leak, timeout or OOM fails it (docs/fuzzing.md).
# Every step runs even when an earlier one failed. Each prints its own
# `N passed, M failed, K skipped`; the last line is the sum over the three
# (the two lit suites' tests, plus the fuzz run as one test), and the exit
# status is non-zero if anything failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec </dev/null

total_passed=0 total_failed=0 total_skipped=0
summary_of() { grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n1; }
add_summary() { # step-name log status
  local line p f s
  line="$(summary_of "$2")"
  if [ -z "$line" ]; then
    line="0 passed, 1 failed, 0 skipped"
  fi
  p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
  f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
  s=$(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
  # A failed step with no failed test (the build broke) still fails.
  if [ "$3" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then f=1; fi
  total_passed=$((total_passed + ${p:-0}))
  total_failed=$((total_failed + ${f:-0}))
  total_skipped=$((total_skipped + ${s:-0}))
  steps+=("$(printf '%-22s %s passed, %s failed, %s skipped' "$1:" "${p:-0}" "${f:-0}" "${s:-0}")")
}
steps=()
logs="$(mktemp -d "${TMPDIR:-/tmp}/vortex-ci.XXXXXX")"
trap 'rm -rf "$logs"' EXIT
ci_start=$SECONDS

start=$SECONDS
bash scripts/test.sh 2>&1 | tee "$logs/test.log"
add_summary "lit (build)" "$logs/test.log" "${PIPESTATUS[0]}"
echo "[ci] scripts/test.sh: $((SECONDS - start)) s"

start=$SECONDS
bash scripts/test-sanitizers.sh 2>&1 | tee "$logs/asan.log"
add_summary "lit (build-asan)" "$logs/asan.log" "${PIPESTATUS[0]}"
echo "[ci] scripts/test-sanitizers.sh: $((SECONDS - start)) s"

start=$SECONDS
VORTEX_NO_SETUP=1 FUZZ_RUNS="${VORTEX_CI_FUZZ_RUNS:-10000}" \
  FUZZ_EXTRA="-seed=1 ${FUZZ_EXTRA:-}" \
  bash scripts/fuzz.sh "${VORTEX_CI_FUZZ_SECONDS:-600}" 1 2>&1 |
  tee "$logs/fuzz.log"
fuzz_status=${PIPESTATUS[0]}
if [ "$fuzz_status" -eq 0 ]; then
  echo "1 passed, 0 failed, 0 skipped" >> "$logs/fuzz.log"
else
  echo "0 passed, 1 failed, 0 skipped" >> "$logs/fuzz.log"
fi
add_summary "fuzz" "$logs/fuzz.log" "$fuzz_status"
echo "[ci] scripts/fuzz.sh: $((SECONDS - start)) s"

echo
echo "[ci] total: $((SECONDS - ci_start)) s"
for s in "${steps[@]}"; do echo "[ci] $s"; done
echo "${total_passed} passed, ${total_failed} failed, ${total_skipped} skipped"
[ "$total_failed" -eq 0 ]
