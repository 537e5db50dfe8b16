// RUN: vortex-opt %s | FileCheck %s
// RUN: vortex-opt %s | vortex-opt | FileCheck %s

// The typed kernel plans round-trip: a score kernel's plan with every
// decision, a cache kernel's with the common ones, a selection's.
// CHECK: t.cache = #vortex.workload_plan<lanes = 16, narrow = false, threads = 256, groups_per_cta = 16, register_budget = 64>
// CHECK-SAME: t.score = #vortex.workload_plan<lanes = 8, narrow = false, threads = 256, groups_per_cta = 32, register_budget = 64, hoist = true, items_per_iteration = 2, ctas_per_sm = 4, carried_registers = 16, item_registers = 16, slice_columns = 8, envelope_mma = false>
// CHECK-SAME: t.topk = #vortex.select_plan<threads = 512, register_keys = 4, radix_bits = 8, rank_sort_max = 512, sort_capacity = 4096, value_bin_candidates = 128, ctas_per_sm = 0, stores_saved = false>
module attributes {
  t.score = #vortex.workload_plan<lanes = 8, narrow = false, threads = 256,
      groups_per_cta = 32, register_budget = 64, hoist = true,
      items_per_iteration = 2, ctas_per_sm = 4, carried_registers = 16,
      item_registers = 16, slice_columns = 8, envelope_mma = false>,
  t.cache = #vortex.workload_plan<lanes = 16, narrow = false, threads = 256,
      groups_per_cta = 16, register_budget = 64>,
  t.topk = #vortex.select_plan<threads = 512, register_keys = 4, radix_bits = 8,
      rank_sort_max = 512, sort_capacity = 4096, value_bin_candidates = 128,
      ctas_per_sm = 0, stores_saved = false>} {
}
