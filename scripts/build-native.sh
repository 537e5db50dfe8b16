#!/usr/bin/env bash
#===- scripts/build-native.sh - Build the native CUDA launcher ----------===#
#
#   scripts/build-native.sh [-v]
#
# Builds python/vortex/runtime/native/launcher.cpp (a torch C++ extension;
# needs a CUDA build of torch, the CUDA toolkit and ninja, not a GPU) into its
# cache directory ($VORTEX_NATIVE_DIR, else ~/.cache/vortex/native/...) and
# prints the path of the built module. Exits non-zero, with the compiler's
# output, when the build fails. PYTHON picks the interpreter (default
# python3), which must have the vortex package installed (docs/python.md).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
PY="${PYTHON:-python3}"
"$PY" -c 'import vortex' 2>/dev/null || {
  echo "build-native: the vortex package is not installed for $PY:" \
       "pip install --no-build-isolation -e . (VORTEX_RUNTIME_ONLY=1 on a" \
       "machine without MLIR)" >&2
  exit 1
}
exec "$PY" -m vortex.runtime.native "$@"
