// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s

// The learned factorized score's two standalone kernels
// (StandaloneKernels.cpp). H = 3 heads, m = 2 landmarks, r = 5 channels,
// blocks of 4 tokens of d = 12 (no extent a power of two: every buffer is
// read at its real extents).
//
// vortex.learned_descriptor is a cache kernel of its own (`_cache_d0`):
// grid items of num_new, one block a CTA, x H m = 6 landmark rows (grid
// z). Its guard records a block id >= num_blocks (status flag 2) from one
// thread. The CTA mixes the block's 4 tokens into its row in 12 floats of
// shared memory (mix row * 4 + t, k at id * 48 + t * 12 + e), then its 4
// warps take the 5 outputs (2 rounds), each reading proj row
// (row / 2 * 5 + i) * 12, and store field[id * 30 + row * 5 + i] as bf16.
//
// The grouped GeMM (`groups = 3`, FactorScore's u_h = Wq[h]^T q_h) is the
// streamed GeMM with x's row (a / 5) * 1 + b: output row a reads the row of
// its own head only.

!kv = !vortex.vtensor<?x4x12xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x3x12xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x6x5xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x6x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x15x12xbf16, #vortex.format<parameter>>
!u1 = !vortex.vtensor<?x15x1xbf16, #vortex.format<batched>>
!u  = !vortex.vtensor<?x3x5xbf16, #vortex.format<batched>>
!sp = !vortex.vtensor<?x6x3xbf16, #vortex.format<ragged>>
!s1 = !vortex.vtensor<?x6x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 12, group_size = 3, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
// The cache step: the one launch, and the field among its writes.
// CHECK: vortex.manifest
// CHECK-SAME: cache = #vortex.step<args = ["k", "v", "g", "mix", "proj", "qproj", "block_ids"], writes = ["g"], launches = [#vortex.launch<kernel = "ld_cache_d0", grid = items, items_of = "num_new", per_cta = 1, threads = 128, shared_bytes = 48,
// CHECK-SAME: reads = ["k", "mix", "proj", "block_ids"], writes = ["g", "status"], grid_z = 6>]>
//
// CHECK-LABEL: gpu.func @ld_indexer_g0(
// CHECK:         %[[G:.+]] = arith.divui %{{.*}}, %c5{{.*}} : index
// CHECK-NEXT:    %[[C1:.+]] = arith.constant 1 : index
// CHECK-NEXT:    %{{.*}} = arith.muli %[[G]], %[[C1]] : index
//
// CHECK:       gpu.func @ld_cache_d0(%{{.*}}: memref<?xi32>, %{{.*}}: i32, %[[K:.+]]: memref<?xbf16>, %[[MIX:.+]]: memref<?xbf16>, %[[PROJ:.+]]: memref<?xbf16>, %[[F:.+]]: memref<?xbf16>, %[[ST:.+]]: memref<?xi32>, %{{.*}}: i32) workgroup(%[[SH:.+]] : memref<12xf32, #gpu.address_space<workgroup>>
// CHECK:         memref.atomic_rmw ori %c2_i32, %[[ST]]
// CHECK:         %[[C48:.+]] = arith.constant 48 : index
// CHECK-NEXT:    arith.muli %{{.*}}, %[[C48]] : index
// CHECK:         %[[C30:.+]] = arith.constant 30 : index
// CHECK-NEXT:    arith.muli %{{.*}}, %[[C30]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %c4{{.*}} step
// CHECK:           memref.load %[[MIX]]
// CHECK:           memref.load %[[K]]
// CHECK:         memref.store %{{.*}}, %[[SH]]
// CHECK:         gpu.barrier
// CHECK:         arith.divui %{{.*}}, %c2 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %c2{{.*}} step
// CHECK:           memref.load %[[SH]]
// CHECK:           memref.load %[[PROJ]]
// CHECK:           gpu.shuffle  xor
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:           memref.store %{{.*}}, %[[F]]
// CHECK:         gpu.barrier
// CHECK:         gpu.return

vortex.flow @ld config = #cfg fields(g = [6, 5]) params(mix = [6, 4], proj = [15, 12], qproj = [15, 12])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj, %qproj: !pj) {
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 3 : i64}
      : !kv, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj, %qproj: !pj) {
  %u1 = vortex.gemm %q, %qproj {groups = 3 : i64} : (!q, !pj) -> !u1
  %u = vortex.reshape %u1 : !u1 -> !u
  %sp = vortex.gemm %u, %g : (!u, !g) -> !sp
  %s1 = vortex.max %sp {dim = 2 : i64} : !sp -> !s1
  %s = vortex.max %s1 {dim = 1 : i64} : !s1 -> !s
  vortex.topk %s into %o : !s into !o
}
