#!/usr/bin/env bash
#===- scripts/build-device-artifacts.sh - PTX, cubins and manifests ------===#
#
#   scripts/build-device-artifacts.sh [outdir] [chip]
#
# Compiles every shipped flow for the GPU machine (which has no MLIR):
#   <outdir>/check/<flow>_g8, <flow>_g5   every flow at G = 8 and G = 5
#   <outdir>/bench/<flow>_k64_g8, _k64_g5 gqa_quest and block_sparse with
#                                         topk_val 64 (docs/benchmarks.md)
#   <outdir>/py/<example>_g8, _g5        every shipped flow traced from its
#                                         Python module (vortex.flows) at
#                                         G = 8 and 5, the PARAMETER example
#                                         learned_query_sparse_attention, and
#                                         vortex_torch's README flow with only
#                                         its imports changed (custom_flow.py)
#   <outdir>/fp8/<flow>_e4m3_g8, _e5m2_g5 every shipped flow with fp8 k / v
#   <outdir>/trtllm/trtllm_block_sparse_attention_g8
#                                         the trtllm selection (TopK(k) +
#                                         Union) of test/Python/Inputs/
#                                         trtllm_flow.py
#   <outdir>/slotted/staged               test/Python/Inputs/slotted_flow.mlir
#   <outdir>/multitoken/<flow>_t4_k64_g8  gqa_quest, block_sparse, running_avg
#                                         with T = 4 query tokens per row
# Each holds <name>.ptx, <name>.cubin and <name>.manifest.json (with
# VORTEX_COMPILE_OPTS="--kernel-cache=DIR", and always for py/, which
# vortex.compile builds with its kernel cache: <kernel>.cubin per kernel
# instead of <name>.cubin; docs/gpu.md, "Kernel cache").
# VORTEX_GPU_OPTS passes options to convert-vortex-to-gpu (for example
# "items-per-iteration=1"), VORTEX_COMPILE_OPTS to vortex-compile (for
# example "--llvm-opt-level=0"); VORTEX_ONLY=bench builds only the bench set.
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
  # shellcheck disable=SC2086 # VORTEX_COMPILE_OPTS is a list of options
  "$BIN/vortex-compile" "$dir/$name.mlir" -o "$dir" --chip="$CHIP" \
    ${VORTEX_COMPILE_OPTS:-}
  rm "$dir/$name.mlir"
}

rm -rf "$OUT/check" "$OUT/bench" "$OUT/py" "$OUT/fp8" "$OUT/trtllm" "$OUT/slotted" \
  "$OUT/multitoken"
for src in "$ROOT"/examples/*.mlir; do
  [ "${VORTEX_ONLY:-}" = bench ] && break
  base="$(basename "$src" .mlir)"
  [ "$base" = gqa_quest_sparse_attention_g5 ] && continue
  variant "$src" "${base}_g8" "group-size=8" "$OUT/check"
  variant "$src" "${base}_g5" "group-size=5" "$OUT/check"
done
for base in gqa_quest_sparse_attention block_sparse_attention \
    running_avg_block_sparse; do
  for g in 8 5; do
    variant "$ROOT/examples/$base.mlir" "${base}_k64_g$g" \
      "group-size=$g topk-val=64" "$OUT/bench"
  done
done
# Multi-token queries: T = 4 tokens per row (q = [rows, 32, 128] at G = 8).
for base in gqa_quest_sparse_attention block_sparse_attention \
    running_avg_block_sparse; do
  variant "$ROOT/examples/$base.mlir" "${base}_t4_k64_g8" \
    "group-size=8 topk-val=64 query-tokens=4" "$OUT/multitoken"
done
# From Python: python -m vortex compile (trace, verify, vortex-compile).
py() { # vortex-compile-args... : python -m vortex compile with the CLI
  VORTEX_COMPILE="$BIN/vortex-compile" \
    VORTEX_OPT="$BIN/vortex-opt" python3 -m vortex compile --target "$CHIP" \
    -o "$OUT/py" "$@" >&2
}
if [ "${VORTEX_ONLY:-}" != bench ]; then
  mkdir -p "$OUT/py"
  for src in "$ROOT"/examples/*.mlir; do
    base="$(basename "$src" .mlir)"
    [ "$base" = gqa_quest_sparse_attention_g5 ] && continue
    for g in 8 5; do
      py --flow "$base" --group-size "$g" --name "${base}_g$g"
    done
  done
  for g in 8 5; do
    py --flow learned_query_sparse_attention --group-size "$g" \
      --name "learned_query_sparse_attention_g$g"
  done
  sed 's/vortex_torch/vortex/g' "$ROOT/test/Python/Inputs/vortex_torch_readme_flow.py" \
    > "$OUT/py/custom_flow.py"
  py "$OUT/py/custom_flow.py" --flow custom_sparse_attention \
    --name custom_sparse_attention_g8
fi
# fp8 k and v (docs/gpu.md, "fp8 KV"): every shipped flow with e4m3 at G = 8
# and e5m2 at G = 5, into fp8/.
if [ "${VORTEX_ONLY:-}" != bench ]; then
  mkdir -p "$OUT/fp8"
  for src in "$ROOT"/examples/*.mlir; do
    base="$(basename "$src" .mlir)"
    [ "$base" = gqa_quest_sparse_attention_g5 ] && continue
    VORTEX_COMPILE="$BIN/vortex-compile" \
      VORTEX_OPT="$BIN/vortex-opt" python3 -m vortex compile --target "$CHIP" \
      -o "$OUT/fp8" --flow "$base" --kv-dtype f8E4M3FN --q-dtype bf16 --name "${base}_e4m3_g8" >&2
    VORTEX_COMPILE="$BIN/vortex-compile" \
      VORTEX_OPT="$BIN/vortex-opt" python3 -m vortex compile --target "$CHIP" \
      -o "$OUT/fp8" --flow "$base" --group-size 5 --kv-dtype f8E5M2 --q-dtype bf16 \
      --name "${base}_e5m2_g5" >&2
  done
fi
# The trtllm selection (TopK(k) + Union), from its Python flow.
if [ "${VORTEX_ONLY:-}" != bench ]; then
  mkdir -p "$OUT/trtllm"
  VORTEX_COMPILE="$BIN/vortex-compile" \
    VORTEX_OPT="$BIN/vortex-opt" python3 -m vortex compile --target "$CHIP" \
    -o "$OUT/trtllm" "$ROOT/test/Python/Inputs/trtllm_flow.py" \
    --flow trtllm_block_sparse_attention --group-size 8 \
    --name trtllm_block_sparse_attention_g8 >&2
  mkdir -p "$OUT/slotted"
  "$BIN/vortex-compile" "$ROOT/test/Python/Inputs/slotted_flow.mlir" \
    -o "$OUT/slotted" --chip="$CHIP"
fi
du -sh "$OUT"
