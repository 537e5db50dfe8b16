#!/usr/bin/env bash
#===- scripts/device-check.sh - The GPU checks of the torch ops ----------===#
#
#   scripts/device-check.sh [artifacts] [outdir]
#
# On the GPU machine (torch with CUDA, nvcc, ninja; no MLIR), over the
# artifacts of scripts/build-device-artifacts.sh: builds the native
# launcher, then runs every flow through its torch ops against the PyTorch
# reference (vortex.testing.gpu_check), the top-k on chosen scores
# (vortex.testing.gpu_topk_check), the torch-op checks (vortex.testing.gpu_torch_check:
# opcheck, torch.compile, CUDA graphs, bad input, devices) and the host-cost
# benchmark (bench/bench_torch_ops.py). Logs go to outdir (default $OUT or
# ./device-logs). Exits non-zero if a check fails.
#
#===----------------------------------------------------------------------===#
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ART="${1:-$ROOT/.device-artifacts}"
LOGS="${2:-${OUT:-$ROOT/device-logs}}"
mkdir -p "$LOGS"
# The package, runtime only (the GPU machine has no MLIR): an editable
# install of this checkout unless vortex is importable already.
python3 -c 'import vortex' 2>/dev/null ||
  VORTEX_RUNTIME_ONLY=1 python3 -m pip install -q --no-build-isolation \
    --no-deps -e "$ROOT" >&2 || exit 1
export PYTHONUNBUFFERED=1
rc=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$LOGS/device.txt"
bash "$ROOT/scripts/build-native.sh" 2>&1 | tail -n 20 | tee "$LOGS/native-build.log" || rc=1
python3 -m vortex.testing.gpu_check --artifacts "$ART/check" --isolate 2>&1 | tee "$LOGS/gpu-check.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
# Exact selections on integer data (ties everywhere): the top-k of a flow
# whose scores stay exact, and the trtllm TopK(k) + Union.
python3 -m vortex.testing.gpu_check --artifacts "$ART/check" --flows block_sparse_attention_g8 \
  --integer-data --no-selftest 2>&1 | tee "$LOGS/gpu-check-integer.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
if [ -d "$ART/trtllm" ]; then
  python3 -m vortex.testing.gpu_check --artifacts "$ART/trtllm" --integer-data --no-selftest \
    --flow-file "$ROOT/test/Python/Inputs/trtllm_flow.py" 2>&1 | tee "$LOGS/gpu-check-trtllm.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
if [ -d "$ART/slotted" ]; then
  python3 "$ROOT/test/Python/Inputs/slotted_gpu_check.py" \
    "$ART/slotted/staged.manifest.json" 2>&1 | tee "$LOGS/gpu-check-slotted.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
# The saved-score flows at 8 rows (one request), where the score kernel
# stores the save; the run above (24 rows) has the top-k store it
# (docs/gpu.md, "Saves in the top-k").
python3 -m vortex.testing.gpu_check --artifacts "$ART/check" --requests 1 --no-selftest \
  --flows running_avg_block_sparse_g8 h2o_token_sparse_attention_g5 \
  gqa_h2o_token_sparse_attention_g8 2>&1 | tee "$LOGS/gpu-check-few-rows.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
# The top-k alone on chosen scores (ties, heavy tails, NaN and inf,
# overflowing and subnormal ranges), each CTA shape, exactly; a saved
# field at 40 rows (stored) and 8 (not).
if [ -d "$ART/bench" ]; then
  python3 -m vortex.testing.gpu_topk_check --artifacts "$ART/bench" 2>&1 | tee "$LOGS/gpu-topk-check.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  python3 -m vortex.testing.gpu_topk_check --artifacts "$ART/bench" --flows running_avg \
    --rows 8 2>&1 | tee "$LOGS/gpu-topk-check-few-rows.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
python3 -m vortex.testing.gpu_torch_check --artifacts "$ART/check" \
  --flows ${VORTEX_TORCH_FLOWS:-block_sparse_attention_g8 running_avg_block_sparse_g8 gqa_quest_sparse_attention_g5} \
  2>&1 | tee "$LOGS/gpu-torch-check.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
# The guards' cost: this build against an unguarded one, when the artifacts
# hold one (bench/bench_guards.py).
if [ -z "${VORTEX_NO_BENCH:-}" ] && [ -d "$ART/unguarded" ]; then
  python3 "$ROOT/bench/bench_guards.py" --guarded "$ART/bench" "$ART/check" \
    --unguarded "$ART/unguarded" 2>&1 | tee "$LOGS/bench-guards.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
if [ -z "${VORTEX_NO_BENCH:-}" ]; then
  python3 "$ROOT/bench/bench_torch_ops.py" --artifacts "$ART/bench" \
    --md "$LOGS/bench-torch-ops.md" 2>&1 | tee "$LOGS/bench-torch-ops.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
exit $rc
