#!/usr/bin/env bash
#===- scripts/run-example.sh - The main job on a bundled flow -------------===#
#
#   scripts/run-example.sh [flow.mlir]
#
# On a fresh Debian 12 machine: installs what is missing (scripts/setup.sh:
# LLVM/MLIR 22, CMake, Ninja, numpy, scikit-build-core, torch), builds the
# compiler and installs the package from this checkout (pip install -e .,
# which builds vortex-opt and vortex-compile into ./build; a no-op when they
# are current), then runs `python -m vortex demo`: it compiles the flow
# (default: examples/block_sparse_attention.mlir) for the CPU, runs the cache
# step on every block of generated data and one indexer step, and prints
# each row's selected blocks next to the float64 reference's. The last line
# says whether they agree; the exit status is non-zero if they do not.
# Setup and build output goes to stderr.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

example="${1:-$ROOT/examples/block_sparse_attention.mlir}"
[ -f "$example" ] || { echo "run-example: no such file: $example" >&2; exit 2; }

bash "$ROOT/scripts/setup.sh" >&2
bash "$ROOT/scripts/install.sh" >&2
exec python3 -m vortex demo "$example"
