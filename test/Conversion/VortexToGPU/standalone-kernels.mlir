// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s

// The standalone kernels of StandaloneKernels.cpp, not workload kernels.
// A padded reshape ([24, 96] -> [1, 2304], padded [32, 128] -> [1, 4096])
// is a copy kernel: grid items of rows (one row a CTA), 128 threads
// striding over the result's padded elements, reading the real element
// f = (r * 2304 + col) at [f / 96, f % 96] of q's real extents, 0 in the
// padded lanes. A GeMM whose parameter weight is over the tile bound
// (docs/contract.md, "Bounds") gets the streamed kernel, two alternatives:
// grid items of rows, 8 a CTA, x 1 x D0' = 128, a CTA per output row a,
// whose 4 warps split the real k, their lanes striding over it (4 weight
// loads an iteration, each used for the CTA's 8 rows), then an XOR-shuffle
// sum per row and warp, summed over the warps through 32 floats of shared
// memory; and `_w`, a warp per output row (z = 32), no shared memory. It reads
// the weight at its [1, r, c] buffer's real extents and x (the reshape's
// scratch, [rows, 1, 4096]) unmasked: vortex-mask-padding leaves both
// operands of such a GeMM alone. The result is f32 scratch of the padded
// extents, [rows, 128, 1] for [rows, 96, 1]; its padded lanes are stored
// as 0.

!kv = !vortex.vtensor<?x16x96xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x96xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x96xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x24x96xbf16, #vortex.format<batched>>
!qf = !vortex.vtensor<?x1x2304xbf16, #vortex.format<batched>>
!w = !vortex.vtensor<1x96x2304xbf16, #vortex.format<parameter>>
!vt = !vortex.vtensor<?x96x1xbf16, #vortex.format<batched>>
!vq = !vortex.vtensor<?x1x96xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @streamed
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 96,
        group_size = 24, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 96]) params(W = [96, 2304])
cache(%k: !kv, %v: !kv, %centroids: !c, %W: !w) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %W: !w) {
  %qf = vortex.reshape %q : !q -> !qf
  %vt = vortex.gemm %qf, %W : (!qf, !w) -> !vt
  %vq = vortex.reshape %vt : !vt -> !vq
  %s = vortex.gemm %vq, %centroids : (!vq, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// The manifest: W is a [1, 96, 2304] parameter, the reshape an items grid
// of rows, one a CTA, and the GeMM two alternatives of one choice, both of
// 8 rows a CTA: a CTA per output row (z = 128) and a warp per output row
// (z = 32), writing the same scratch.
// CHECK: vortex.manifest = #vortex.manifest<
// CHECK-SAME: W = #vortex.tensor<role = parameter, dtype = bf16, shape = [1, 96, 2304]>
// CHECK-SAME: kernel = "streamed_indexer_r0", grid = items, items_of = "rows", per_cta = 1, threads = 128, params = [#vortex.launch_param<name = "rows", kind = scalar>, #vortex.launch_param<name = "q", kind = buffer>, #vortex.launch_param<name = "scratch0", kind = buffer>], reads = ["q"], writes = ["scratch0"]>
// CHECK-SAME: kernel = "streamed_indexer_g1", grid = items, items_of = "rows", per_cta = 8, threads = 128, shared_bytes = 128, params = [#vortex.launch_param<name = "rows", kind = scalar>, #vortex.launch_param<name = "scratch0", kind = buffer>, #vortex.launch_param<name = "W", kind = buffer>, #vortex.launch_param<name = "[[OB:scratch[0-9]+]]", kind = buffer>], reads = ["scratch0", "W"], writes = ["[[OB]]"], choice = "streamed_indexer_g1", grid_z = 128>
// CHECK-SAME: kernel = "streamed_indexer_g1_w", grid = items, items_of = "rows", per_cta = 8, threads = 128, params = [#vortex.launch_param<name = "rows", kind = scalar>, #vortex.launch_param<name = "scratch0", kind = buffer>, #vortex.launch_param<name = "W", kind = buffer>, #vortex.launch_param<name = "[[OB]]", kind = buffer>], reads = ["scratch0", "W"], writes = ["[[OB]]"], choice = "streamed_indexer_g1", grid_z = 32>

// CHECK: gpu.module @streamed_kernels
// CHECK:       gpu.func @streamed_indexer_r0(%[[ROWS:.+]]: i32, %[[Q:.+]]: memref<?xbf16>, %[[R:.+]]: memref<?xf32>) kernel
// CHECK-SAME:    known_block_size = array<i32: 128, 1, 1>
// CHECK:         %[[ITEM:.+]] = gpu.block_id  x
// CHECK:         scf.if
// CHECK:           scf.for
// CHECK:             arith.divui {{.*}}, %c96
// CHECK:             memref.load %[[Q]]
// CHECK:             memref.store {{.*}}, %[[R]]
// CHECK:         gpu.return
// CHECK:       gpu.func @streamed_indexer_g1(%{{.+}}: i32, %[[X:.+]]: memref<?xf32>, %[[W:.+]]: memref<?xbf16>, %[[OUT:.+]]: memref<?xf32>) workgroup(%[[SH:.+]] : memref<32xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK-SAME:    known_block_size = array<i32: 128, 1, 1>
// CHECK:         gpu.block_id  x
// CHECK:         gpu.block_id  z
// CHECK:         scf.for
// CHECK:           memref.load %[[W]]
// CHECK:           memref.load %[[X]]
// CHECK:         gpu.shuffle  xor
// CHECK:         memref.store {{.*}}, %[[SH]]
// CHECK:         gpu.barrier
// CHECK:         memref.store {{.*}}, %[[OUT]]
// CHECK:         gpu.barrier
// CHECK:         gpu.return
// CHECK:       gpu.func @streamed_indexer_g1_w(%{{.+}}: i32, %[[X2:.+]]: memref<?xf32>, %[[W2:.+]]: memref<?xbf16>, %[[OUT2:.+]]: memref<?xf32>) kernel
// CHECK-NOT:     gpu.barrier
// CHECK:         memref.load %[[W2]]
// CHECK:         memref.load %[[X2]]
// CHECK-NOT:     gpu.barrier
// CHECK:         gpu.shuffle  xor
// CHECK-NOT:     gpu.barrier
// CHECK:         memref.store {{.*}}, %[[OUT2]]
// CHECK-NOT:     gpu.barrier
// CHECK:         gpu.return
