#!/usr/bin/env bash
#===- scripts/run-example.sh - The main job on a bundled flow -------------===#
#
#   scripts/run-example.sh [flow.mlir]
#
# Installs what is missing and builds vortex-opt if needed (that output goes
# to stderr), compiles the
# flow (default: examples/block_sparse_attention.mlir) through the
# vortex-to-cpu pipeline into a shared object, runs the cache step on every
# block of generated data and one indexer step, and prints each row's
# selected blocks next to the numpy reference's.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${VORTEX_BUILD_DIR:-$ROOT/build}"

example="${1:-$ROOT/examples/block_sparse_attention.mlir}"
[ -f "$example" ] || { echo "run-example: no such file: $example" >&2; exit 2; }

# Install what is missing (quick when nothing is), then configure and build
# on the first run; a no-op when vortex-opt is current.
bash "$ROOT/scripts/setup.sh" >&2
bash "$ROOT/scripts/build.sh" vortex-opt >&2

export VORTEX_OPT="$BUILD_DIR/bin/vortex-opt"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m vortex.demo "$example"
