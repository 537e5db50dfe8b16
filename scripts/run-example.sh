#!/usr/bin/env bash
#===- scripts/run-example.sh - Compile a vortex flow with vortex-opt ------===#
#
#   scripts/run-example.sh [example.mlir] [vortex-opt options...]
#
# Builds vortex-opt if needed (build output goes to stderr), then parses,
# verifies, canonicalizes and prints the flow (default:
# examples/block_sparse_attention.mlir). Extra options are passed on to
# vortex-opt after --canonicalize.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${VORTEX_BUILD_DIR:-$ROOT/build}"

example="${1:-$ROOT/examples/block_sparse_attention.mlir}"
[ "$#" -gt 0 ] && shift
[ -f "$example" ] || { echo "run-example: no such file: $example" >&2; exit 2; }

# Configure and build on the first run; a no-op when vortex-opt is current.
bash "$ROOT/scripts/build.sh" vortex-opt >&2

exec "$BUILD_DIR/bin/vortex-opt" --canonicalize "$example" "$@"
