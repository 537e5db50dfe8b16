#!/usr/bin/env bash
#===- scripts/install.sh - Build and install the package from this checkout -===#
#
#   scripts/install.sh
#
# Builds the compiler into ./build (scripts/build.sh; quick when current) and
# installs the `vortex` package from this checkout in editable mode
# (pip install --no-build-isolation -C build-dir=build -e ., which reuses
# ./build): afterwards
# `import vortex`, `python -m vortex compile ...` and the tests find
# vortex-opt and vortex-compile with no environment variables. Needs
# scripts/setup.sh first on a new machine. VORTEX_BUILD_DIR is not used
# here: the package's build tree is ./build (pyproject.toml).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

VORTEX_BUILD_DIR="$ROOT/build" bash "$ROOT/scripts/build.sh"
echo "[install] pip install --no-build-isolation -e $ROOT" >&2
python3 -m pip install --quiet --no-build-isolation --no-deps \
  --disable-pip-version-check -C build-dir=build -e "$ROOT"
python3 -c 'import vortex' || {
  echo "[install] error: the package installed but does not import" >&2
  exit 1
}
