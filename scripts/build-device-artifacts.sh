#!/usr/bin/env bash
#===- scripts/build-device-artifacts.sh - PTX, cubins and manifests ------===#
#
#   scripts/build-device-artifacts.sh [outdir] [chip]
#
# Compiles every shipped flow for the GPU machine (which has no MLIR):
#   <outdir>/check/<flow>_g8, <flow>_g5   every flow at G = 8 and G = 5
#   <outdir>/bench/<flow>_k64_g8, _k64_g5 gqa_quest and block_sparse with
#                                         topk_val 64 (docs/benchmarks.md)
# Each holds <name>.ptx, <name>.cubin and <name>.manifest.json.
# VORTEX_GPU_OPTS passes options to convert-vortex-to-gpu (for example
# "items-per-iteration=1"); VORTEX_ONLY=bench builds only the bench set.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/.device-artifacts}"
CHIP="${2:-sm_90}"
BIN="${VORTEX_BUILD_DIR:-$ROOT/build}/bin"
bash "$ROOT/scripts/build.sh" vortex-opt vortex-compile >&2

variant() { # example name config-options outdir
  local src="$1" name="$2" opts="$3" dir="$4" base
  base="$(basename "$src" .mlir)"
  mkdir -p "$dir"
  "$BIN/vortex-opt" "$src" --vortex-set-config="$opts" |
    sed "s/vortex.flow @$base /vortex.flow @$name /" |
    "$BIN/vortex-opt" --vortex-fuse --vortex-pad --vortex-mask-padding \
      --convert-vortex-to-gpu="${VORTEX_GPU_OPTS:-}" > "$dir/$name.mlir"
  "$BIN/vortex-compile" "$dir/$name.mlir" -o "$dir" --chip="$CHIP"
  rm "$dir/$name.mlir"
}

rm -rf "$OUT/check" "$OUT/bench"
for src in "$ROOT"/examples/*.mlir; do
  [ "${VORTEX_ONLY:-}" = bench ] && break
  base="$(basename "$src" .mlir)"
  [ "$base" = gqa_quest_sparse_attention_g5 ] && continue
  variant "$src" "${base}_g8" "group-size=8" "$OUT/check"
  variant "$src" "${base}_g5" "group-size=5" "$OUT/check"
done
for base in gqa_quest_sparse_attention block_sparse_attention; do
  for g in 8 5; do
    variant "$ROOT/examples/$base.mlir" "${base}_k64_g$g" \
      "group-size=$g topk-val=64" "$OUT/bench"
  done
done
du -sh "$OUT"
