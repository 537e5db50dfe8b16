//===- VortexPlans.td - The GPU generator's typed kernel plans -*- tablegen -*-===//
//
// What convert-vortex-to-gpu decided for a kernel, recorded on its gpu.func
// as `vortex.plan` (and reported by `plan-only` as a remark), typed the way
// IREE's `translation_info` is: each decision a named, typed field, so a
// reader (a lit test, a tool) gets no string-keyed dictionary to guess at.
// Nothing downstream reads them back: the kernels are built from the C++
// plans (WorkloadPlan.h, Selection/RowSelection.h) these attributes print.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_VORTEXPLANS_TD
#define VORTEX_DIALECT_VORTEXPLANS_TD

include "mlir/IR/AttrTypeBase.td"

def Vortex_WorkloadPlanAttr : Vortex_Attr<"WorkloadPlan", "workload_plan"> {
  let summary = "the plan of a workload (score or cache) kernel";
  let description = [{
    `lanes` per item (1 with `narrow`: every tile replicated), `threads`
    per CTA in groups (`groups_per_cta`), the register budget the plan
    keeps within. A score kernel also records whether the per-row values
    are carried (`hoist`), the items a group loads per iteration, its CTAs
    per SM, the registers the carried values and an item take, the columns
    of a lane's slice of a row and whether the envelope sums run on tensor
    cores (`envelope_mma`); a cache kernel has none of these.

    ```mlir
    #vortex.workload_plan<lanes = 8, narrow = false, threads = 256,
        groups_per_cta = 32, register_budget = 96, hoist = true,
        items_per_iteration = 2, ctas_per_sm = 4, carried_registers = 8,
        item_registers = 16, slice_columns = 8, envelope_mma = false>
    ```
  }];
  let parameters = (ins
    "int64_t":$lanes,
    "::mlir::BoolAttr":$narrow,
    "int64_t":$threads,
    "int64_t":$groups_per_cta,
    "int64_t":$register_budget,
    OptionalParameter<"::mlir::BoolAttr">:$hoist,
    OptionalParameter<"std::optional<int64_t>">:$items_per_iteration,
    OptionalParameter<"std::optional<int64_t>">:$ctas_per_sm,
    OptionalParameter<"std::optional<int64_t>">:$carried_registers,
    OptionalParameter<"std::optional<int64_t>">:$item_registers,
    OptionalParameter<"std::optional<int64_t>">:$slice_columns,
    OptionalParameter<"::mlir::BoolAttr">:$envelope_mma);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Vortex_SelectPlanAttr : Vortex_Attr<"SelectPlan", "select_plan"> {
  let summary = "the plan of a top-k (selection) kernel";
  let description = [{
    `threads` per row's CTA, the keys each holds in registers, the radix
    digit width, the largest budget ranked by sorting, the sort's capacity,
    the candidates a value bin keeps (0: none), CTAs per SM (0: not set)
    and whether the kernel stores the saved score (docs/gpu.md, "Saves in
    the top-k").

    ```mlir
    #vortex.select_plan<threads = 512, register_keys = 8, radix_bits = 8,
        rank_sort_max = 512, sort_capacity = 4096,
        value_bin_candidates = 0, ctas_per_sm = 0, stores_saved = false>
    ```
  }];
  let parameters = (ins
    "int64_t":$threads,
    "int64_t":$register_keys,
    "int64_t":$radix_bits,
    "int64_t":$rank_sort_max,
    "int64_t":$sort_capacity,
    "int64_t":$value_bin_candidates,
    "int64_t":$ctas_per_sm,
    "::mlir::BoolAttr":$stores_saved);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // VORTEX_DIALECT_VORTEXPLANS_TD
