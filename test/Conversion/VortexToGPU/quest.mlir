// RUN: vortex-opt %examples/gqa_quest_sparse_attention.mlir --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
// RUN: vortex-opt %examples/gqa_quest_sparse_attention.mlir --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=envelope-mma=false | FileCheck %s --check-prefix=FMA
// RUN: vortex-opt %examples/gqa_quest_sparse_attention_g5.mlir --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s --check-prefix=G5
// RUN: vortex-opt %examples/gqa_block_sparse_attention.mlir --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s --check-prefix=SCAN

// Quest: one persistent score kernel, the top-k, and one cache kernel.

// The manifest (version 2), keys sorted: per step the argument order, the
// tensors the step writes, then its kernels in launch order.
// CHECK: module attributes {gpu.container_module, vortex.manifest = #vortex.manifest<version = 2, flow = "gqa_quest_sparse_attention", backend = "cuda", source_hash = "{{[0-9a-f]{64}"}}
// CHECK-SAME: config = {block_size = 16 : i64, group_size = 8 : i64, head_dim = 128 : i64
// CHECK-SAME: symbols = {num_blocks = "k", num_new = "block_ids", rows = "dense_kv_indptr", total = "dense_kv_indices"}
// CHECK-SAME: tensors = {
// CHECK-SAME: block_ids = #vortex.tensor<role = input, dtype = i32, shape = ["num_new"]>
// CHECK-SAME: max = #vortex.tensor<role = cache, dtype = bf16, shape = ["num_blocks", 1, 128]>
// CHECK-SAME: q = #vortex.tensor<role = input, dtype = bf16, shape = ["rows", 8, 128]>
// CHECK-SAME: scratch0 = #vortex.tensor<role = scratch, dtype = f32, shape = ["total", 1, 1]>
// CHECK-SAME: sparse_kv_indices = #vortex.tensor<role = output, dtype = i32, shape = ["total"]>
// CHECK-SAME: sparse_kv_indptr = #vortex.tensor<role = output, dtype = i32, shape = ["rows+1"]>
// CHECK-SAME: status = #vortex.tensor<role = status, dtype = i32, shape = [4], flags = {block_ids = 2 : i64, dense_kv_indices = 1 : i64, dense_kv_indptr = 4 : i64, slot_of_ptr = 8 : i64}>
// CHECK-SAME: steps = {attend = {{.*}}, cache = #vortex.step<args = ["k", "v", "max", "min", "block_ids"], writes = ["max", "min"]
// CHECK-SAME: launches = [#vortex.launch<kernel = "gqa_quest_sparse_attention_cache_w0", grid = items, items_of = "num_new", per_cta = 16, threads = 256
// CHECK-SAME: params = [#vortex.launch_param<name = "block_ids", kind = buffer>, #vortex.launch_param<name = "num_new", kind = scalar>, #vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "max", kind = buffer>, #vortex.launch_param<name = "min", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "num_blocks", kind = scalar>]
// CHECK-SAME: reads = ["k", "block_ids"], writes = ["max", "min", "status"]>]>
// CHECK-SAME: indexer = #vortex.step<args = ["q", "k", "v", "max", "min", "dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices"], writes = ["sparse_kv_indptr", "sparse_kv_indices"]
// CHECK-SAME: launches = [#vortex.launch<kernel = "gqa_quest_sparse_attention_indexer_w0", grid = persistent, ctas_per_sm = 4, threads = 256
// CHECK-SAME: reads = ["q", "max", "min", "dense_kv_indptr", "dense_kv_indices"], writes = ["scratch0", "status"]>
// CHECK-SAME: #vortex.launch<kernel = "gqa_quest_sparse_attention_indexer_topk", grid = rows, threads = 512
// CHECK-SAME: #vortex.launch_param<name = "topk_ratio_bits", kind = scalar, dtype = i64, value = 4589168020290535424>
// CHECK-SAME: reads = ["dense_kv_indptr", "dense_kv_indices", "scratch0"]
// CHECK-SAME: choice = "gqa_quest_sparse_attention_indexer_topk">
// CHECK-SAME: #vortex.launch<kernel = "gqa_quest_sparse_attention_indexer_topk_t256", grid = rows, threads = 256, shared_bytes = 34912
// CHECK-SAME: #vortex.launch<kernel = "gqa_quest_sparse_attention_indexer_topk_t128", grid = rows, threads = 128
// CHECK-SAME: writes = ["sparse_kv_indptr", "sparse_kv_indices", "status"], choice = "gqa_quest_sparse_attention_indexer_topk">]>}>

// CHECK: gpu.module @gqa_quest_sparse_attention_kernels
// CHECK: gpu.func @gqa_quest_sparse_attention_indexer_w0(
// CHECK-SAME: %[[INDPTR:[^:]+]]: memref<?xi32>, %[[INDICES:[^:]+]]: memref<?xi32>, %[[ROWS:[^:]+]]: i32,
// CHECK-SAME: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xi32>, %{{.+}}: i32) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// Groups of 8 lanes own a block (the plan's 32 bytes per lane: q's 64
// carried registers fit the budget): lane = tid % 32, lane in group =
// lane % 8.
// CHECK-SAME: vortex.plan = #vortex.workload_plan<lanes = 8,
// CHECK: gpu.thread_id x
// CHECK: arith.remui %{{.+}}, %c8
// The chunk of CSR positions of each group, cut from the extent of the
// indices (no load), the block ids of the first iteration and indptr[rows]
// issued at once, then the row of the first position, searched by the
// group's 8 lanes together: a round count from `rows` alone, then per round
// one probe of indptr per lane and the count of probes at or before the
// target summed over the group (9-fold narrowing).
// CHECK: memref.dim %[[INDICES]]
// CHECK: arith.ceildivui
// CHECK: scf.if
// CHECK: memref.load %[[INDICES]]
// CHECK-NEXT: memref.load %[[INDPTR]][%{{.+}}]
// CHECK: scf.while
// CHECK: arith.muli %{{.+}}, %c9
// CHECK: scf.for
// CHECK: memref.load %[[INDPTR]]
// CHECK: gpu.subgroup_reduce add %{{.+}} cluster(size = 8) : (i32) -> i32
// CHECK: scf.yield
// The main loop carries the row, the row of its per-row values (-1: none
// yet), the row's bounds, the warp's q fragments for the sums on tensor
// cores (their row, -1: none yet, and 32 registers: envelope-mma.mlir), and
// the block id of its next iteration (one item per iteration here; loaded
// an iteration ahead, so no gather waits for an id load).
// CHECK: scf.for {{.*}} iter_args({{.*}}, %{{.+}} = %c-1, {{.*}}) -> (index, index, index, index, {{(i32, )+}}i32) {
// The envelopes (32 bytes per lane in two 16-byte slices 128 bytes apart,
// read once: nontemporal) are issued first, then the next ids, overlapping
// the row bookkeeping.
// CHECK-NOT: memref.load %[[INDICES]]
// CHECK-COUNT-4: vector.load %{{.+}}[%{{.+}}] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK: memref.load %[[INDICES]]
// Advance the row (its bounds carried).
// CHECK: scf.while
// Sum over D of the envelope products on tensor cores: the warp's loop
// over its items' rows, q's fragments loaded (cached) when the row is not
// theirs, 16 mma; the max over the heads after.
// CHECK-NOT: math.fma
// CHECK: scf.while
// CHECK: nvvm.vote.sync ballot
// CHECK: scf.if
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK-NOT: math.fma
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : f32
// CHECK: scf.if
// CHECK: memref.store
// CHECK: gpu.return

// With envelope-mma=false: q (8 x 16 bf16) is carried instead.
// FMA: gpu.func @gqa_quest_sparse_attention_indexer_w0(
// FMA-SAME: %{{[^:]+}}: memref<?xi32>, %[[FIDX:[^:]+]]: memref<?xi32>,
// FMA-SAME: envelope_mma = false
// The main loop carries the row, the row q is of (-1: none yet), the
// row's bounds, q (8 x 16 bf16), and the block id of its next iteration
// (one item per iteration here; loaded an iteration ahead, so no gather
// waits for an id load).
// FMA: scf.for {{.*}} iter_args({{.*}}, %{{.+}} = %c-1, {{.*}}) -> (index, index, index, index, {{(vector<16xbf16>, )+}}i32) {
// The envelopes (32 bytes per lane in two 16-byte slices 128 bytes apart,
// read once: nontemporal) are issued first, then the next ids, overlapping
// the row bookkeeping.
// FMA-NOT: memref.load %[[FIDX]]
// FMA-COUNT-4: vector.load %{{.+}}[%{{.+}}] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// FMA-NOT: vector.load
// FMA: memref.load %[[FIDX]]
// Advance the row (its bounds carried), keep q in registers while it does
// not change.
// FMA: scf.while
// FMA: arith.cmpi ne
// FMA: scf.if
// FMA: vector.load {{.*}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// FMA: vector.shuffle {{.*}} : vector<8xbf16>, vector<8xbf16>
// FMA: arith.extf
// Sum over D of the envelope products, by the identity (envelope-sum.mlir):
// fused multiply-adds over the lane slice, then the 8 lanes of the group;
// the max over the heads after.
// FMA-NOT: arith.maximumf
// FMA: math.fma
// FMA-NOT: arith.maximumf
// FMA: gpu.subgroup_reduce add %{{.+}} cluster(size = 8) : (f32) -> f32
// FMA: arith.maximumf
// FMA: scf.if
// FMA: memref.store
// FMA: gpu.return

// The top-k: one CTA per row (its offset a CTA sum), a radix select, then
// the kept 64-bit keys placed by rank.
// CHECK: gpu.func @gqa_quest_sparse_attention_indexer_topk(
// CHECK-SAME: workgroup(%{{.+}} : memref<4096xi64, #gpu.address_space<workgroup>>
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: arith.xori
// CHECK: gpu.barrier

// The cache kernel: max and min over the 16 tokens of each completed block.
// CHECK: gpu.func @gqa_quest_sparse_attention_cache_w0(
// CHECK-SAME: %{{.+}}: memref<?xi32>, %{{.+}}: i32
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>

// G = 5: B's columns past the 5th head are zeros, only the 5 real heads'
// sums are gathered, and the max over heads sees -inf in the padded rows.
// G5: gpu.func @gqa_quest_sparse_attention_g5_indexer_w0
// G5-SAME: envelope_mma = true
// G5: arith.cmpi slt, %{{.+}}, %c5 : index
// G5-COUNT-16: nvvm.mma.sync
// G5-COUNT-2: gpu.shuffle xor
// G5-COUNT-5: gpu.shuffle idx
// G5-NOT: gpu.shuffle
// G5: arith.constant 0xFF800000 : f32
// G5: gpu.return

// Softmax over the blocks of each row is its own kernel between the score
// and the max over heads.
// SCAN: indexer = #vortex.step<args = [{{.*}}launches = [{{.*}}kernel = "gqa_block_sparse_attention_indexer_w0"{{.*}}kernel = "gqa_block_sparse_attention_indexer_s1"{{.*}}kernel = "gqa_block_sparse_attention_indexer_w2"{{.*}}kernel = "gqa_block_sparse_attention_indexer_topk"
// SCAN: gpu.func @gqa_block_sparse_attention_indexer_s1(
// SCAN: gpu.block_id x
// SCAN: gpu.all_reduce maximumf
// SCAN: math.exp
// SCAN: gpu.all_reduce add
