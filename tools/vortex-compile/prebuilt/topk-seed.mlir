// The flow vortex compiles at build time to prebuild its library kernels
// (tools/vortex-compile/prebuilt/CMakeLists.txt; docs/gpu.md, "Prebuilt
// kernels"). Its top-k kernels are every flow's: their text depends on no
// flow knob (the budget and the reserved blocks are launch parameters), only
// on the chip and the compile options. Its score and cache kernels (a sum
// over the per-block maximum of k) are no shipped flow's, so the prebuilt
// directory serves only the top-k to the examples. Default options and
// config, as `vortex-compile` and `vortex.compile` use them.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!m  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!mr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

vortex.flow @vortex_prebuilt_topk
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(peak = [1, 128])
cache(%k: !kv, %v: !kv, %peak: !m) {
  %p = vortex.max %k {dim = 1 : i64} : !kv -> !mr
  vortex.write %p into %peak : !mr into !m
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %peak: !m) {
  %score = vortex.sum %peak {dim = 2 : i64} : !m -> !s
  vortex.topk %score into %o : !s into !o
}
