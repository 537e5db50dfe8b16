// RUN: vortex-opt %s --split-input-file -verify-diagnostics

// Each rule of the typed kernel plans (lib/Dialect/PlanAttrs.cpp).

// expected-error @+1 {{a workload plan needs lanes, threads and groups_per_cta >= 1 and register_budget >= 0}}
module attributes {x = #vortex.workload_plan<lanes = 0, narrow = false, threads = 256, groups_per_cta = 16, register_budget = 64>} {}

// -----

// expected-error @+1 {{a score kernel's plan records hoist, items_per_iteration, ctas_per_sm, carried_registers, item_registers, slice_columns and envelope_mma together}}
module attributes {x = #vortex.workload_plan<lanes = 8, narrow = false, threads = 256, groups_per_cta = 32, register_budget = 64, hoist = true>} {}

// -----

// expected-error @+1 {{items_per_iteration must be >= 1 and the other counts >= 0}}
module attributes {x = #vortex.workload_plan<lanes = 8, narrow = false, threads = 256, groups_per_cta = 32, register_budget = 64, hoist = true, items_per_iteration = 0, ctas_per_sm = 4, carried_registers = 16, item_registers = 16, slice_columns = 8, envelope_mma = false>} {}

// -----

// expected-error @+1 {{a selection plan needs threads >= 1 and radix_bits in [1, 32]}}
module attributes {x = #vortex.select_plan<threads = 512, register_keys = 4, radix_bits = 0, rank_sort_max = 512, sort_capacity = 4096, value_bin_candidates = 0, ctas_per_sm = 0, stores_saved = false>} {}

// -----

// expected-error @+1 {{a selection plan's counts must be >= 0}}
module attributes {x = #vortex.select_plan<threads = 512, register_keys = -1, radix_bits = 8, rank_sort_max = 512, sort_capacity = 4096, value_bin_candidates = 0, ctas_per_sm = 0, stores_saved = false>} {}
