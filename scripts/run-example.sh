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
# each row's selected blocks next to the float64 reference's, and whether
# they agree (the exit status is non-zero if they do not). Then
# `python -m vortex demo-engine`: a real model (SmolLM2-135M, which setup
# fetches) continues a text through transformers' continuous batching, with
# dense attention and with a shipped flow, and the two continuations, their
# agreement and the share of blocks the flow attended are printed (about
# 30 s on 2 cores). Setup and build output goes to stderr.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

example="${1:-$ROOT/examples/block_sparse_attention.mlir}"
[ -f "$example" ] || { echo "run-example: no such file: $example" >&2; exit 2; }

bash "$ROOT/scripts/setup.sh" >&2
bash "$ROOT/scripts/install.sh" >&2
python3 -m vortex demo "$example"
echo
exec python3 -m vortex demo-engine 2> >(grep -v "GGUF tensors" >&2)
