// The second flow vortex compiles at build time to prebuild its library
// kernels (CMakeLists.txt here): a top-k that also stores a saved score
// (docs/gpu.md, "Saves in the top-k") is a kernel of its own, with the
// saved field and `saves_min_rows` as parameters. Its text depends on the
// field's dtype (bf16 here, the default intermediate dtype) and not on the
// flow's other knobs. Its score and cache kernels are no shipped flow's.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!m  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!mr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!f  = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

vortex.flow @vortex_prebuilt_topk_save
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(peak = [1, 128], last = [1, 1])
cache(%k: !kv, %v: !kv, %peak: !m, %last: !f) {
  %p = vortex.max %k {dim = 1 : i64} : !kv -> !mr
  vortex.write %p into %peak : !mr into !m
  vortex.fill %last {value = 0.000000e+00 : f32} : !f
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %peak: !m, %last: !f) {
  %sum = vortex.sum %peak {dim = 2 : i64} : !m -> !s
  %prev = vortex.load %last : !f -> !s
  %score = vortex.add %prev, %sum {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32}
      : (!s, !s) -> !s
  vortex.save %score into %last : !s into !f
  vortex.topk %score into %o : !s into !o
}
