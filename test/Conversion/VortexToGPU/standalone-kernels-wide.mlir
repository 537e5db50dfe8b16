// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s

// A streamed weight of 65536 output rows ([65536, 4]: 262144 elements, over
// the tile): the CTA-per-output-row alternative would need a grid z of
// 65536, over the launch bound of 65535, so each CTA computes two output
// rows in turn (z = 32768); the warp-per-output-row one has z = 16384.

!kv = !vortex.vtensor<?x16x4xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!c4 = !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>>
!cr = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x1x4xbf16, #vortex.format<batched>>
!w = !vortex.vtensor<1x65536x4xbf16, #vortex.format<parameter>>
!p = !vortex.vtensor<?x65536x1xbf16, #vortex.format<batched>>
!m = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @wide
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 4,
        group_size = 1, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 1]) params(W = [65536, 4])
cache(%k: !kv, %v: !kv, %centroids: !c, %W: !w) {
  %m4 = vortex.mean %k {dim = 1 : i64} : !kv -> !c4
  %m = vortex.max %m4 {dim = 2 : i64} : !c4 -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %W: !w) {
  %p = vortex.gemm %q, %W : (!q, !w) -> !p
  %best = vortex.max %p {dim = 1 : i64} : !p -> !m
  %s = vortex.gemm %best, %centroids : (!m, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK: kernel = "wide_indexer_g0", grid = items, items_of = "rows", per_cta = 8, threads = 128, shared_bytes = 128, {{.*}}choice = "wide_indexer_g0", grid_z = 32768>
// CHECK-SAME: kernel = "wide_indexer_g0_w", grid = items, items_of = "rows", per_cta = 8, threads = 128, {{.*}}choice = "wide_indexer_g0", grid_z = 16384>
// CHECK: gpu.func @wide_indexer_g0(
// CHECK:         %[[Z:.+]] = gpu.block_id  z
// The two output rows of the CTA: a = z * 2 + j.
// CHECK:         scf.for %[[J:.+]] = %c0{{.*}} to %c2
// CHECK:           %[[ZA:.+]] = arith.muli %[[Z]], %c2
// CHECK:           arith.addi %[[ZA]], %[[J]]
