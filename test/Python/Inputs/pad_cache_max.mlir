// Cache-side max over dim 2 with head_dim 6 (padded to 8 by vortex-pad).
!kv = !vortex.vtensor<?x4x6xf32, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x6xf32, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!f  = !vortex.vtensor<?x4x1xf32, #vortex.format<paged>>
!fr = !vortex.vtensor<?x4x1xf32, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
vortex.flow @pad_cache_max
    config = #vortex.config<block_size = 4, page_size = 4, head_dim = 6,
        group_size = 2, topk_val = 3, topk_ratio = 2.500000e-01 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = f32, kv_dtype = f32>
    fields(kmax = [4, 1])
cache(%k: !kv, %v: !kv, %kmax: !f) {
  %m = vortex.max %k {dim = 2 : i64} : !kv -> !fr
  vortex.write %m into %kmax : !fr into !f
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %kmax: !f) {
  %l = vortex.load %kmax : !f -> !fr
  %s = vortex.max %l {dim = 1 : i64} : !fr -> !s
  vortex.topk %s into %o : !s into !o
}
