#!/usr/bin/env bash
#===- scripts/build-decode-artifacts.sh - artifacts of bench_decode.py ----===#
#
#   scripts/build-decode-artifacts.sh [outdir] [chip]
#
# Compiles the flows bench/bench_decode.py measures (issue 35), with their
# attend kernels (convert-vortex-to-gpu attend=on: a flow the kernels do not
# support fails here rather than leaving the step out of the manifest):
#   <outdir>/decode/<flow>_k64_g8, _k64_g5   gqa_quest_sparse_attention and
#                                           block_sparse_attention, topk_val
#                                           64, for `chip` (default sm_90)
#   <outdir>/decode-cpu/<flow>_k3_g8, _k3_g5 the same flows at D 64, topk_val
#                                           3 for the CPU, for
#                                           `bench_decode.py --selftest-cpu
#                                           --artifacts <outdir>/decode-cpu`
#                                           (VORTEX_DECODE_CPU=0 skips them)
#   <outdir>/attend/<case>                  bench/attend_flows.py's cases (odd
#                                           D, G, T, block sizes, fp8), for
#                                           `bench/attend_gpu_check.py
#                                           <outdir>/attend/*`
# Each holds <name>.ptx, <name>.cubin and <name>.manifest.json (GPU) or
# lib<name>.so and <name>.manifest.json (CPU), like build-device-artifacts.sh
# (whose `bench` set is the same flows without attend=on).
# VORTEX_BIN=DIR uses the vortex-opt / vortex-compile in DIR as they are
# (no build); otherwise scripts/build.sh builds them first.
# VORTEX_GPU_OPTS adds options to convert-vortex-to-gpu,
# VORTEX_COMPILE_OPTS to vortex-compile.
#
# Then, on the GPU machine (torch + triton, no MLIR):
#   python3 bench/bench_decode.py --artifacts <outdir>/decode --quick
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/.device-artifacts}"
CHIP="${2:-sm_90}"
if [ -n "${VORTEX_BIN:-}" ]; then
  BIN="$VORTEX_BIN"
else
  BIN="${VORTEX_BUILD_DIR:-$ROOT/build}/bin"
  bash "$ROOT/scripts/build.sh" vortex-opt vortex-compile >&2
fi

GPU_OPTS="attend=on${VORTEX_GPU_OPTS:+ $VORTEX_GPU_OPTS}"
variant() { # example name config-options outdir
  local src="$1" name="$2" opts="$3" dir="$4" base
  base="$(basename "$src" .mlir)"
  mkdir -p "$dir"
  "$BIN/vortex-opt" "$src" --vortex-set-config="$opts" |
    sed "s/vortex.flow @$base /vortex.flow @$name /" |
    "$BIN/vortex-opt" --vortex-fuse --vortex-pad --vortex-mask-padding \
      --convert-vortex-to-gpu="$GPU_OPTS" > "$dir/$name.mlir"
  # shellcheck disable=SC2086 # VORTEX_COMPILE_OPTS is a list of options
  "$BIN/vortex-compile" "$dir/$name.mlir" -o "$dir" --chip="$CHIP" \
    ${VORTEX_COMPILE_OPTS:-}
  rm "$dir/$name.mlir"
  # The manifest must carry the attend step (bench_decode.py launches it).
  python3 - "$dir/$name.manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
if "attend" not in m["steps"]:
    sys.exit(f"{sys.argv[1]}: no attend step in the manifest")
EOF
}

FLOWS="gqa_quest_sparse_attention block_sparse_attention"
rm -rf "$OUT/decode" "$OUT/decode-cpu" "$OUT/attend"
for base in $FLOWS; do
  for g in 8 5; do
    variant "$ROOT/examples/$base.mlir" "${base}_k64_g$g" \
      "group-size=$g topk-val=64" "$OUT/decode"
  done
done
if [ "${VORTEX_DECODE_CPU:-1}" != 0 ]; then
  mkdir -p "$OUT/decode-cpu"
  for base in $FLOWS; do
    for g in 8 5; do
      VORTEX_COMPILE="$BIN/vortex-compile" \
        VORTEX_OPT="$BIN/vortex-opt" python3 -m vortex compile --target cpu \
        -o "$OUT/decode-cpu" --flow "$base" --group-size "$g" --head-dim 64 \
        --topk-val 3 --name "${base}_k3_g$g" >&2
    done
  done
fi
SRC="$(mktemp -d)"
trap 'rm -rf "$SRC"' EXIT
for name in $(python3 "$ROOT/bench/attend_flows.py" "$SRC"); do
  variant "$SRC/$name.mlir" "$name" "" "$OUT/attend/$name"
done
for d in decode attend decode-cpu; do
  [ ! -d "$OUT/$d" ] || du -sh "$OUT/$d"
done
