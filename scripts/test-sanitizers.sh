#!/usr/bin/env bash
#===- scripts/test-sanitizers.sh - The lit suite under ASan and UBSan ----===#
#
#   scripts/test-sanitizers.sh [--no-setup]
#
# 1. scripts/setup.sh --sanitizers: what scripts/setup.sh installs, plus
#    clang-22 and libclang-rt-22-dev (--no-setup skips it).
# 2. scripts/configure-asan.sh: ./build-asan (VORTEX_ASAN_BUILD_DIR), clang-22,
#    -fsanitize=address,undefined -fno-sanitize-recover=undefined on every
#    vortex target, libFuzzer coverage (the same build gives scripts/fuzz.sh
#    its fuzzer); Debian's libMLIR.so / libLLVM.so stay uninstrumented.
# 3. Builds it and runs the whole lit suite on it (scripts/test.sh with
#    VORTEX_BUILD_DIR=build-asan), with the run-time options that
#    cmake/VortexSanitizers.cmake writes into the lit site config:
#      ASAN_OPTIONS=allow_user_poisoning=0:abort_on_error=1:detect_leaks=1
#      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
#    allow_user_poisoning=0 because LLVM's headers, compiled into vortex
#    code with ASan on, poison BumpPtrAllocator memory that the
#    uninstrumented libMLIR.so reuses without unpoisoning (false reports);
#    abort_on_error=1 so that a report is a crash (SIGABRT), which `not`
#    in a RUN line does not take for an expected failure. Options already in
#    the environment are appended (they win). Stock mlir-opt, which loads
#    the instrumented VortexPlugin.so in test/Embedding, runs with the ASan
#    runtime in LD_PRELOAD (lit feature `sanitizers`; docs/fuzzing.md).
# Ends with `N passed, M failed, K skipped` (scripts/test.sh's line) and
# exits non-zero if anything failed.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

run_setup=1
for arg in "$@"; do
  case "$arg" in
    --no-setup) run_setup=0 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--no-setup]" >&2; exit 2 ;;
  esac
done

if [ "$run_setup" -eq 1 ]; then
  bash "$ROOT/scripts/setup.sh" --sanitizers
fi

BUILD_DIR="$(bash "$ROOT/scripts/configure-asan.sh")"

start=$SECONDS
VORTEX_BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/build.sh"
echo "[test-sanitizers] build: $((SECONDS - start)) s" >&2

log="$(mktemp "${TMPDIR:-/tmp}/vortex-asan-check.XXXXXX")"
trap 'rm -f "$log"' EXIT
start=$SECONDS
set +e
VORTEX_BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/test.sh" --no-setup 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
echo "[test-sanitizers] lit under ASan/UBSan: $((SECONDS - start)) s" >&2
summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)"
echo "${summary:-0 passed, 1 failed, 0 skipped}"
exit $status
