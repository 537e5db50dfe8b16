#!/usr/bin/env bash
#===- scripts/configure-asan.sh - Configure the sanitizer build ----------===#
#
#   scripts/configure-asan.sh
#
# Configures ./build-asan (VORTEX_ASAN_BUILD_DIR) for scripts/test-sanitizers.sh
# and scripts/fuzz.sh: Release, clang-22, VORTEX_ENABLE_SANITIZERS=ON
# (-fsanitize=address,undefined on every vortex target) and
# VORTEX_ENABLE_FUZZER=ON (libFuzzer coverage; tools/vortex-fuzz links
# libFuzzer), against the same Debian LLVM/MLIR 22 as ./build. Quick when
# nothing changed. Prints the build directory on stdout.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLVM_PREFIX="${LLVM_PREFIX:-/usr/lib/llvm-22}"
BUILD_DIR="${VORTEX_ASAN_BUILD_DIR:-$ROOT/build-asan}"
args=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
      -DVORTEX_ENABLE_FUZZER=ON)

if [ ! -f "$BUILD_DIR/build.ninja" ] || [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  echo "[build-asan] configuring $BUILD_DIR (clang-22)" >&2
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    -DCMAKE_BUILD_TYPE=Release \
    -DVORTEX_ENABLE_SANITIZERS=ON "${args[@]}" >&2
fi
echo "$BUILD_DIR"
