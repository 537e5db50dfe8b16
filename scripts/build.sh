#!/usr/bin/env bash
#===- scripts/build.sh - Configure (if needed) and build Vortex -----------===#
#
#   scripts/build.sh [ninja targets...]     # default: everything (`all`)
#
# Builds into ./build (override with VORTEX_BUILD_DIR) with Ninja, Release,
# against the LLVM/MLIR 22 Debian packages in /usr/lib/llvm-22 (override with
# LLVM_PREFIX). Configures on the first run; afterwards Ninja reconfigures by
# itself when a CMakeLists.txt changes. Run scripts/setup.sh first on a new
# machine (scripts/test.sh does).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${VORTEX_BUILD_DIR:-$ROOT/build}"
LLVM_PREFIX="${LLVM_PREFIX:-/usr/lib/llvm-22}"

if [ ! -f "$BUILD_DIR/build.ninja" ] || [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  if [ ! -f "$LLVM_PREFIX/lib/cmake/mlir/MLIRConfig.cmake" ]; then
    echo "[build] error: MLIR 22 not found ($LLVM_PREFIX/lib/cmake/mlir):" \
         "run scripts/setup.sh (or set LLVM_PREFIX)" >&2
    exit 1
  fi
  echo "[build] configuring $BUILD_DIR" >&2
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    -DCMAKE_BUILD_TYPE=Release
fi

echo "[build] ninja -C $BUILD_DIR $*" >&2
ninja -C "$BUILD_DIR" "$@"
