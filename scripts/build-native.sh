#!/usr/bin/env bash
#===- scripts/build-native.sh - Build the native CUDA launcher ----------===#
#
#   scripts/build-native.sh [-v]
#
# Builds python/vortex/native/launcher.cpp (a torch C++ extension; needs a
# CUDA build of torch, the CUDA toolkit and ninja, not a GPU) into its cache
# directory ($VORTEX_NATIVE_DIR, else ~/.cache/vortex/native/...) and prints
# the path of the built module. Exits non-zero, with the compiler's output,
# when the build fails. PYTHON picks the interpreter (default python3).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m vortex.native "$@"
