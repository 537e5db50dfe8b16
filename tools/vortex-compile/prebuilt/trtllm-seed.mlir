// The second flow vortex compiles at build time (CMakeLists.txt here;
// docs/gpu.md, "Prebuilt kernels"): the trtllm selection, TopK(k) + Union.
// Its TopK(k) kernels take their k and reserved blocks as launch parameters,
// so their text is every trtllm selection's, whatever its k; one TopK(k)
// serves them all. Its score, cache and union kernels are no shipped
// flow's. Default options and config, as `vortex-compile` and
// `vortex.compile` use them.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!m  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!mr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!t  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!l  = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>

vortex.flow @vortex_prebuilt_trtllm
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
  %t, %l = vortex.trtllm_topk %score {k = 32 : i64} : !s -> !t, !l
  vortex.union (%t, %l), (%t, %l) into %o : !t, !l into !o
}
