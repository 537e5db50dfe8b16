//===- Passes.td - Vortex transformation passes -------------*- tablegen -*-===//

#ifndef VORTEX_TRANSFORMS_PASSES_TD
#define VORTEX_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def VortexFuse : Pass<"vortex-fuse", "::mlir::ModuleOp"> {
  let summary = "Group workload-fused (W) ops into vortex.kernel regions";
  let description = [{
    vortex_torch's W-fusion, made visible in the IR. Over the ops of each
    flow body (fusion groups start as single ops), any two W groups merge
    when the merge keeps the group graph acyclic: no path of length >= 2
    between them, in either direction, through a third group. So producers
    fuse with consumers, siblings fuse (sharing an input or not), standalone
    (S) ops are never merged and act as barriers, and a W op that depends on
    an S op whose input comes from another W group stays apart from that
    group. Side-effecting ops (write, fill, save) fuse like any W op and are
    kept. A load of a field is ordered before every save of it. Each group
    becomes one `vortex.kernel` yielding the values used outside it; groups
    are placed in topological order.
  }];
}

def VortexSplitCustomCalls
    : Pass<"vortex-split-custom-calls", "::mlir::ModuleOp"> {
  let summary = "Split a flow's indexer around its custom ops into stages";
  let description = [{
    A flow `@f` whose indexer holds `n` `vortex.custom_call`s becomes `n + 1`
    stage flows `@f_stage0` ... `@f_stage<n>` (same config, fields,
    parameters and cache body): stage `k` holds the indexer ops between
    call `k - 1` and call `k`. Stage `k` exports (`vortex.stage_out`) the
    operands of call `k` as `c<k>_in<j>` and the values it defines that a
    later stage uses as `s<k>_<m>`; a stage imports (`vortex.stage_in`)
    every value of an earlier stage or call it uses (`c<i>_out` for the
    result of call `i`). The last stage ends in the selection. The runtime
    runs stage 0, call 0 on its exports, stage 1, ... (docs/python.md,
    "Custom ops"). A flow without custom ops is left as it is. Refused,
    at the op: a custom op inside a fused kernel (split before
    `vortex-fuse`), a value crossing a cut whose inner sizes are not powers
    of two, and a `vortex.load` of a field saved in an earlier stage (a
    load sees the start of the step).
  }];
}

def VortexPadToPow2 : Pass<"vortex-pad", "::mlir::ModuleOp"> {
  let summary = "Make the power-of-two padded shape of vtensors explicit";
  let description = [{
    Every vtensor inside a flow whose D0 or D1 is not a power of two gets
    its padded shape made explicit in its type (`padded = [8, 128]` for a
    G = 5 query). The real extents stay the type's shape, so later passes
    and the lowering know which lanes are padding. Vortex ops outside a
    flow are rejected: their types belong to function signatures.
  }];
}

def VortexMaskPadding : Pass<"vortex-mask-padding", "::mlir::ModuleOp"> {
  let summary = "Give padded lanes the neutral value of their consumer";
  let description = [{
    After `vortex-pad`: in front of every reduction (max, min, mean, sum,
    l2norm, the interleaved ones) over a padded axis and of every
    contraction (gemm, gemv) over a padded K axis, insert a
    `vortex.mask_lanes` whose value is the consumer's neutral element:
    -inf for max, +inf for min, 0 for sum, mean, l2norm and contractions.
    Mean still divides by the real extent. Loads and stores of padded
    values are masked by the lowering (padded lanes read 0, stores write
    the real lanes). A value that needs padding but whose padding is still
    implicit is rejected: run `vortex-pad` first.
  }];
}


def VortexSetConfig : Pass<"vortex-set-config", "::mlir::ModuleOp"> {
  let summary = "Retarget flows to other knobs and re-infer every type";
  let description = [{
    Rewrites the config of every flow (only the options given) and
    re-infers the types that depend on it: `q` becomes
    `[?, T x group_size, head_dim]` (T query tokens per row: `query-tokens`,
    else the flow's current T), and every op result's inner shape is
    recomputed from its operands with the op's shape rule (broadcasts,
    reductions, contractions, Kronecker products, interleaves). This turns
    a flow written for one model into the same flow for another, e.g. a
    G = 8 flow into Qwen3-14B's G = 5. Reshape results keep their declared
    shape and must still match the element count. Explicit padding is
    dropped (run `vortex-pad` again). The result is verified.
  }];
  let options = [
    Option<"groupSize", "group-size", "int64_t", "0", "query heads per KV head (0: keep)">,
    Option<"queryTokens", "query-tokens", "int64_t", "0", "query tokens per row, q = [rows, T x G, D] (0: keep)">,
    Option<"topkVal", "topk-val", "int64_t", "-1", "top-k budget (-1: keep)">,
    Option<"topkRatio", "topk-ratio", "double", "-1.0", "budget ratio (< 0: keep)">,
    Option<"reservedBos", "reserved-bos", "int64_t", "-1", "reserved leading blocks (-1: keep)">,
    Option<"reservedEos", "reserved-eos", "int64_t", "-1", "reserved trailing blocks (-1: keep)">
  ];
}

#endif // VORTEX_TRANSFORMS_PASSES_TD
