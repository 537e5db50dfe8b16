//===- Passes.td - Vortex conversion passes -----------------*- tablegen -*-===//

#ifndef VORTEX_CONVERSION_PASSES_TD
#define VORTEX_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertVortexToLinalg : Pass<"convert-vortex-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower vortex flows to linalg on tensors, one function per step";
  let description = [{
    Each `vortex.flow @F` becomes two functions that follow the compiled-flow
    contract (docs/contract.md):

    * `@F_indexer(q, k, v, fields..., dense_kv_indptr, dense_kv_indices,
      sparse_kv_indptr, sparse_kv_indices)`: one decode step; scores every
      block of every row and writes the sparse CSR; `vortex.save` updates
      its fields in place.
    * `@F_cache(k, v, fields..., block_ids)`: summarizes the completed
      blocks `block_ids` into the fields, in place.

    Buffers are memrefs of f32 (floats) and i32 (indices); inside, the body
    is linalg on tensors (`linalg.generic`, `linalg.fill`) plus
    tensor/arith/math/scf. Format addressing is explicit: a paged operand
    is gathered by block id, a batched one broadcast to the blocks of its
    row through the CSR, ragged values live in CSR order. Row-segment ops
    and the top-k are per-row `scf` loops over `[bos, n - eos)`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}


def ConvertVortexToGPU : Pass<"convert-vortex-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Generate GPU kernels (gpu dialect) and a launch manifest for flows";
  let description = [{
    Expects flows after `vortex-fuse`, `vortex-pad` and `vortex-mask-padding`
    (a top-level workload op outside a `vortex.kernel` becomes its own
    kernel). Emits `gpu.module @<flow>_kernels` and the module attribute
    `vortex.manifest` described in docs/gpu.md, then erases the flow.

    * Each indexer `vortex.kernel` becomes a persistent kernel: every group
      of `lanes` threads owns one block at a time and walks a contiguous
      chunk of CSR positions; the block id is read once per block, paged
      rows are read with 16-byte vector loads spread over the group's lanes,
      the row's batched operands (q) stay in registers while the row does
      not change, and reductions over D use clustered subgroup reductions;
      a sum over D of max(x * a, x * b) with x a per-row bf16 input of up
      to 8 rows runs on tensor cores (`envelope-mma`: mma.sync m16n8k16,
      the warp's groups then walking its chunk at consecutive positions).
      Only the scored positions `[0, n - eos)` of rows that need selection
      are computed (vortex_torch's planner schedules no other work).
    * Each cache `vortex.kernel` becomes a kernel over the completed blocks.
    * Softmax, normalize, conv1d and mean/sum/max/min/l2norm over dim 0 run
      one CTA per row over `[bos, n - eos)`.
    * `vortex.topk` / `vortex.approx_topk` run one CTA per row: a radix
      select of the k-th best score key (8-bit digits, histograms in shared
      memory), then the k kept keys gathered
      and ordered by rank (k up to 4096; a larger k picks one CTA-wide
      maximum at a time). It is emitted as three kernels of 512, 256 and
      128 threads, alternatives of one manifest `choice` (the runtime
      launches the first whose rows fit on the chip in one wave), or as
      the one `topk-threads` names. Before the digit passes it tries one
      pass of value bins (`topk-value-bins`). docs/gpu.md, "Top-k".
    * A `vortex.save` of the score a `vortex.topk` reads, into a `[1, 1]`
      field nothing else uses, is stored by the top-k when a step has more
      rows than `topk-saves-min-rows`, else by the score kernel (both
      kernels take the count as the manifest constant `saves_min_rows`).
      docs/gpu.md, "Saves in the top-k".
    * The `attend` step (`attend`): a flash-decoding kernel over a CSR of
      pool blocks, one CTA per (row, KV split) loading each K/V row once
      for all of the row's T x G heads, and a kernel that merges the
      splits by their lse. docs/gpu.md, "Attention".
    Values crossing kernels live in f32 scratch buffers. Each workload
    kernel is planned before it is emitted (lanes per block, narrow mode,
    hoisting, items per iteration, registers, CTA shape) and carries the
    plan as `vortex.plan`; `lanes` and `hoist` override it.
  }];
  let options = [
    Option<"ctasPerSM", "ctas-per-sm", "int64_t", "4",
           "CTAs per multiprocessor of the persistent grid">,
    Option<"threadsPerCTA", "threads", "int64_t", "256",
           "threads per CTA of the workload kernels">,
    Option<"itemsPerIteration", "items-per-iteration", "int64_t", "2",
           "most blocks a lane group loads together per iteration (fewer "
           "when the registers they need would cut occupancy)">,
    Option<"lanes", "lanes", "int64_t", "0",
           "lanes per block of the workload kernels, overriding the plan "
           "(0: planned; 1: narrow mode); refused for a kernel whose ops "
           "cannot be laid out over them">,
    Option<"hoist", "hoist", "bool", "true",
           "let the plan compute a row's batched values once per row "
           "(false: with every block)">,
    Option<"topkCtasPerSM", "topk-ctas-per-sm", "int64_t", "0",
           "CTAs per multiprocessor the top-k kernel's registers must allow "
           "(nvvm.minctasm; 0: no bound)">,
    Option<"topkThreads", "topk-threads", "int64_t", "0",
           "threads of a top-k CTA (one CTA per row; they hold the row's "
           "first 2048 score keys in registers between them), overriding "
           "the plan (0: planned; 128, 256 or 512)">,
    Option<"topkValueBins", "topk-value-bins", "bool", "true",
           "let the top-k first try one pass of 256 value bins of equal "
           "width over the row's score range, ranking the few keys of the "
           "k-th best key's bin directly, before the digit passes (false: "
           "digit passes only, smaller kernels that compile faster)">,
    Option<"topkSavesMinRows", "topk-saves-min-rows", "int64_t", "8",
           "a score that is also saved (a vortex.save of the value a "
           "vortex.topk reads, into a [1, 1] field no later op uses) is "
           "stored by the top-k when a step has more than this many rows, "
           "else by the score kernel (docs/gpu.md, \"Saves in the "
           "top-k\"; -1: always by the score kernel)">,
    Option<"envelopeIdentity", "envelope-identity", "bool", "true",
           "sum over the columns of max(x * a, x * b) as (x (a + b) + "
           "|x| |a - b|) / 2 in fused multiply-adds (false: as written; "
           "docs/gpu.md, \"Envelope sums\")">,
    Option<"streamingLoads", "streaming-loads", "bool", "true",
           "mark the workload kernels' loads of rows read once (gathered "
           "by block id or read at a CSR position, not written by the "
           "kernel) nontemporal, which vortex-gpu-lower-nontemporal-loads "
           "turns into loads that skip L1 (docs/gpu.md, \"Streaming "
           "loads\")">,
    Option<"sectorSlices", "sector-slices", "bool", "true",
           "in score kernels whose lanes hold 32 bytes of a row, place a "
           "lane's two 16-byte slices a group's width apart, so each "
           "16-byte load of a group reads whole 32-byte sectors (false: a "
           "lane's bytes contiguous; docs/gpu.md, \"Sector slices\")">,
    Option<"envelopeMMA", "envelope-mma", "bool", "true",
           "with envelope-identity, sum max(x * a, x * b) over the columns "
           "of a score kernel's bf16 rows on tensor cores (mma.sync "
           "m16n8k16, sm_80+) when x is a per-row input of up to 8 rows "
           "used by nothing else (false: fused multiply-adds; docs/gpu.md, "
           "\"Envelope sums on tensor cores\")">,
    Option<"attendMMA", "attend-mma", "bool", "true",
           "run the attend split kernel's q.k and p.v on tensor cores "
           "(mma.sync m16n8k16, sm_80+) for bf16 q, k and v, head_dim 64 "
           "or 128 and up to 16 query heads a row (false: fused "
           "multiply-adds on CUDA cores; docs/gpu.md, \"Attention\")">,
    Option<"attend", "attend", "std::string", "\"auto\"",
           "the attend step's kernels (docs/gpu.md, \"Attention\"): "
           "auto (for a flow whose shape they support; the manifest of "
           "any other has no attend step), on (a flow they do not support "
           "is refused with a diagnostic) or off">,
    Option<"planOnly", "plan-only", "bool", "false",
           "plan each workload kernel and report its plan (what its "
           "vortex.plan would record) as a remark at its op instead of "
           "emitting it; the other kernels are built for the buffers the "
           "plans read, then dropped, and the flow is left as it was (a "
           "test of the planner)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

#endif // VORTEX_CONVERSION_PASSES_TD
