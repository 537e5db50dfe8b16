#!/usr/bin/env bash
#===- scripts/fuzz.sh - Run the vortex fuzz target for a while -----------===#
#
#   scripts/fuzz.sh [seconds] [jobs]        # default: 60 s, 1 job
#
# 1. Builds tools/vortex-fuzz in ./build-asan (scripts/configure-asan.sh:
#    clang-22, libFuzzer, ASan + UBSan; scripts/setup.sh --sanitizers first
#    unless VORTEX_NO_SETUP=1).
# 2. Regenerates the seed corpus from examples/ and test/
#    (tools/vortex-fuzz/make-corpus.py) into <fuzzdir>/seeds.
# 3. Fuzzes for `seconds` with `jobs` processes (libFuzzer's -fork mode when
#    jobs > 1), with the dictionary tools/vortex-fuzz/vortex.dict, each input
#    limited to FUZZ_TIMEOUT s (default 30) and FUZZ_RSS_MB MB (default
#    2048). Inputs that add coverage go to <fuzzdir>/corpus (kept between
#    runs); crashes, sanitizer reports, leaks, timeouts and OOMs are written
#    to <fuzzdir>/crashes as crash-*, leak-*, timeout-*, oom-*.
# 4. Prints the executions and the findings, with the command that
#    reproduces each, and exits 1 if there is any (2 if the fuzzer could not
#    run at all), 0 otherwise.
#
# <fuzzdir> is build-asan/fuzz (VORTEX_FUZZ_DIR). Also:
#   FUZZ_RUNS=N        stop after N executions instead of (or before) the time
#   FUZZ_KEEP_GOING=1  do not stop at the first finding: collect them all
#                      (-fork with -ignore_crashes/-ignore_timeouts/
#                      -ignore_ooms; the 1,000,000-execution run used this)
#   FUZZ_EXTRA="..."   more libFuzzer flags
#   LSAN_OPTIONS=suppressions=FILE   leave a known, reported leak out (the
#                      1,000,000-execution run did, docs/fuzzing.md)
# Reproduce a finding: build-asan/bin/vortex-fuzz <file> (VORTEX_FUZZ_VERBOSE=1
# prints the stages run and the diagnostics); the same input without its
# `//!` line, through vortex-opt and the pass the line names, usually does
# too. tools/vortex-fuzz/triage.py groups findings by their stack.
# Run-time options: build-asan/sanitizer-env.sh (cmake/VortexSanitizers.cmake,
# docs/fuzzing.md).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
jobs="${2:-1}"
case "$seconds$jobs" in
  *[!0-9]*) echo "usage: $0 [seconds] [jobs]" >&2; exit 2 ;;
esac
[ "$jobs" -ge 1 ] || jobs=1

if [ "${VORTEX_NO_SETUP:-0}" != 1 ]; then
  bash "$ROOT/scripts/setup.sh" --sanitizers
fi
BUILD_DIR="$(bash "$ROOT/scripts/configure-asan.sh")"
VORTEX_BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/build.sh" vortex-fuzz
FUZZER="$BUILD_DIR/bin/vortex-fuzz"
# (grep without -q reads all: no SIGPIPE for the fuzzer under pipefail.)
if ! "$FUZZER" -help=1 2>&1 | grep max_total_time > /dev/null; then
  echo "[fuzz] $FUZZER is not a libFuzzer binary (VORTEX_ENABLE_FUZZER off?)" >&2
  exit 2
fi
# shellcheck source=/dev/null
. "$BUILD_DIR/sanitizer-env.sh"

FUZZ_DIR="${VORTEX_FUZZ_DIR:-$BUILD_DIR/fuzz}"
mkdir -p "$FUZZ_DIR/corpus" "$FUZZ_DIR/crashes"
rm -rf "$FUZZ_DIR/seeds"
python3 "$ROOT/tools/vortex-fuzz/make-corpus.py" "$FUZZ_DIR/seeds"
# The structure-aware mutator restarts from the seeds that parse.
export VORTEX_FUZZ_SEED_DIR="$FUZZ_DIR/seeds"
before="$(mktemp "${TMPDIR:-/tmp}/vortex-fuzz-before.XXXXXX")"
trap 'rm -f "$before"' EXIT
ls "$FUZZ_DIR/crashes" > "$before"

flags=(
  -max_total_time="$seconds"
  -timeout="${FUZZ_TIMEOUT:-30}"
  -rss_limit_mb="${FUZZ_RSS_MB:-2048}"
  -max_len="${FUZZ_MAX_LEN:-16384}"
  -dict="$ROOT/tools/vortex-fuzz/vortex.dict"
  -only_ascii=1
  -artifact_prefix="$FUZZ_DIR/crashes/"
  -print_final_stats=1
  -report_slow_units=1000000
)
[ -n "${FUZZ_RUNS:-}" ] && flags+=(-runs="$FUZZ_RUNS")
if [ "$jobs" -gt 1 ] || [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
  flags+=(-fork="$jobs")
fi
if [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
  flags+=(-ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi
# shellcheck disable=SC2206
flags+=(${FUZZ_EXTRA:-})

log="$FUZZ_DIR/fuzz.log"
echo "[fuzz] $FUZZER ${flags[*]} corpus seeds  (log: $log)" >&2
start=$SECONDS
set +e
# The corpus first: libFuzzer writes new inputs into the first directory.
# Bounded even if the fuzzer itself hangs (its own -timeout catches a slow
# input, and -max_total_time does not interrupt the first pass over the
# seeds).
timeout -s INT -k 60 $((seconds + 600)) \
  "$FUZZER" "${flags[@]}" "$FUZZ_DIR/corpus" "$FUZZ_DIR/seeds" > "$log" 2>&1
status=$?
set -e
elapsed=$((SECONDS - start))

# Executions: the final stats of a plain run, else the last `#N` line (the
# -fork parent's running total).
runs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n1)"
if [ -z "$runs" ] || grep -q '^INFO: -fork=' "$log"; then
  runs="$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -n1)"
fi
mapfile -t found < <(ls "$FUZZ_DIR/crashes" | grep -E '^(crash|leak|timeout|oom)-' |
                     grep -vxF -f "$before" || true)

echo "[fuzz] ${runs:-0} executions in ${elapsed} s (exit ${status}), ${#found[@]} new finding(s)"
if [ "${#found[@]}" -gt 0 ]; then
  grep -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|LLVM ERROR|SUMMARY:' \
    "$log" | sort | uniq -c | sort -rn | head -n 20 >&2 || true
  for f in "${found[@]}"; do
    echo "[fuzz]   $FUZZ_DIR/crashes/$f"
  done
  echo "[fuzz] reproduce: $FUZZER <file>   (VORTEX_FUZZ_VERBOSE=1 for the stages and diagnostics;"
  echo "[fuzz]   . $BUILD_DIR/sanitizer-env.sh first for the same sanitizer options)"
  echo "[fuzz] group them: python3 $ROOT/tools/vortex-fuzz/triage.py $FUZZ_DIR/crashes"
  exit 1
fi
if [ "$status" -ne 0 ] || [ -z "$runs" ]; then
  echo "[fuzz] the fuzzer failed without leaving a finding; the end of $log:" >&2
  tail -n 30 "$log" >&2
  exit 2
fi
exit 0
