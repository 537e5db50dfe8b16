// RUN: vortex-opt %s | FileCheck %s
// RUN: vortex-opt %s | vortex-opt | FileCheck %s

// The typed manifest round-trips: every kind of launch parameter, each grid
// kind with its own fields, optional reads, writes, pdl, choice and a fixed
// grid z, the
// attend step's decode_refusal and the status tensor's flags. Defaults
// (shared_bytes = 0) are not printed.
// CHECK-LABEL: module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "toy", backend = "cuda", source_hash = "abc",
// CHECK-SAME: config = {block_size = 16 : i64}, symbols = {rows = "q"},
// CHECK-SAME: tensors = {q = #vortex.tensor<role = input, dtype = bf16, shape = ["rows", 8, 128]>, status = #vortex.tensor<role = status, dtype = i32, shape = [4], flags = {block_ids = 2 : i64}>}
// CHECK-SAME: steps = {attend = #vortex.step<args = ["q"], writes = [], launches = [], decode_refusal = "reserved_eos = 0">
// CHECK-SAME: indexer = #vortex.step<args = ["q"], writes = ["o"], launches = [
// CHECK-SAME: #vortex.launch<kernel = "score", grid = persistent, ctas_per_sm = 2, threads = 128, shared_bytes = 1024, params = [#vortex.launch_param<name = "q", kind = buffer>, #vortex.launch_param<name = "rows", kind = scalar>, #vortex.launch_param<name = "bits", kind = scalar, dtype = i64, value = 7>], reads = ["q"], writes = ["s"]>
// CHECK-SAME: #vortex.launch<kernel = "topk_a", grid = items, items_of = "q", per_cta = 4, threads = 256, params = [], pdl = true, choice = "topk">
// CHECK-SAME: #vortex.launch<kernel = "topk_b", grid = row_splits, threads = 32, params = [], choice = "topk", grid_z = 3>
module attributes {vortex.manifest = #vortex.manifest<
    version = 2, flow = "toy", backend = "cuda", source_hash = "abc",
    config = {block_size = 16}, symbols = {rows = "q"},
    tensors = {
      q = #vortex.tensor<role = input, dtype = bf16, shape = ["rows", 8, 128]>,
      status = #vortex.tensor<role = status, dtype = i32, shape = [4],
                              flags = {block_ids = 2}>},
    steps = {
      indexer = #vortex.step<args = ["q"], writes = ["o"], launches = [
        #vortex.launch<kernel = "score", grid = persistent, ctas_per_sm = 2,
                       threads = 128, shared_bytes = 1024,
                       params = [#vortex.launch_param<name = "q", kind = buffer>,
                                 #vortex.launch_param<name = "rows", kind = scalar>,
                                 #vortex.launch_param<name = "bits", kind = scalar,
                                                      dtype = i64, value = 7>],
                       reads = ["q"], writes = ["s"]>,
        #vortex.launch<kernel = "topk_a", grid = items, items_of = "q",
                       per_cta = 4, threads = 256, params = [], pdl = true,
                       choice = "topk">,
        #vortex.launch<kernel = "topk_b", grid = row_splits, threads = 32,
                       params = [], choice = "topk", grid_z = 3>]>,
      attend = #vortex.step<args = ["q"], writes = [], launches = [],
                            decode_refusal = "reserved_eos = 0">}>} {
}
