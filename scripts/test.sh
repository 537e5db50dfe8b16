#!/usr/bin/env bash
#===- scripts/test.sh - Set up, build and run the vortex test suite -------===#
#
#   scripts/test.sh [--no-setup]
#
# 1. scripts/setup.sh: installs what is missing (quick when nothing is);
#    --no-setup skips it.
# 2. scripts/build.sh: configures ./build if needed and builds everything;
#    scripts/install.sh installs the package from this checkout (pip
#    install -e .) unless it is already.
# 3. ninja -C build check-vortex: builds the test tools and runs lit on
#    test/.
# Ends with one line `N passed, M failed[, K skipped]` read off lit's summary,
# and exits non-zero if anything failed, the build broke, or no test ran.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${VORTEX_BUILD_DIR:-$ROOT/build}"

run_setup=1
for arg in "$@"; do
  case "$arg" in
    --no-setup) run_setup=0 ;;
    --setup) run_setup=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--no-setup]" >&2; exit 2 ;;
  esac
done

if [ "$run_setup" -eq 1 ]; then
  bash "$ROOT/scripts/setup.sh"
fi

bash "$ROOT/scripts/build.sh"

# The Python tests import the installed package: this checkout's, installed
# editable (scripts/install.sh) unless it is already.
installed=$(python3 -c 'import os, vortex; print(os.path.dirname(
  os.path.realpath(vortex.__file__)))' 2>/dev/null || true)
if [ "$installed" != "$(realpath "$ROOT/python/vortex")" ]; then
  bash "$ROOT/scripts/install.sh"
fi

log="$(mktemp "${TMPDIR:-/tmp}/vortex-check.XXXXXX")"
trap 'rm -f "$log"' EXIT

set +e
ninja -C "$BUILD_DIR" check-vortex 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# lit's summary: "  Passed: 7 (100.00%)", "  Failed: 1 (12.50%)", ...
count() {
  local n
  n=$(sed -n "s/^ *$1: *\([0-9][0-9]*\).*/\1/p" "$log" | tail -n1)
  echo "${n:-0}"
}
passed=$(( $(count 'Passed') + $(count 'Expectedly Failed') ))
failed=$(( $(count 'Failed') + $(count 'Unresolved') + $(count 'Timed Out') \
         + $(count 'Unexpectedly Passed') ))
skipped=$(( $(count 'Unsupported') + $(count 'Skipped') + $(count 'Excluded') ))

echo
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  # The build of a test dependency failed, or lit died before its summary.
  echo "check-vortex failed (exit $status) before lit reported a failure" >&2
  failed=1
fi
if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
  echo "no test ran" >&2
  failed=1
fi
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
