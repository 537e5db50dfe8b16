//! config group-size=65535 | nvvm
// Fuzz finding oom-d77755ca: the same blowup through vortex.mean over the
// query heads and the NVVM lower stage (177 s, 2.5 GB). Fixed by the tile
// bound; regression tests as gpu-group-size-gemm.mlir.
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @bs
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 14, topk_ratio = 6.250000e-1 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}
