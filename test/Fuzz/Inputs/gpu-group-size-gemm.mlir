//! config group-size=65536 | gpu
// Fuzz finding oom-5bcf28ed (1,000,000-execution run, docs/fuzzing.md): with
// group_size = 65536 convert-vortex-to-gpu emitted a 65536 x 128 tile (38 s,
// 2.2 GB in a release build; over libFuzzer's 2 GB under ASan). Fixed by the
// tile bound of docs/contract.md: the config is refused. Regression tests:
// test/Transforms/set-config-invalid.test, test/Fuzz/replay.test.
!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @gqa_block_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 141, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %score = vortex.gemm %q, %centroids : (!q, !c) -> !sh
  %normalized = vortex.softmax %score {scale = 9.000000e-02 : f32} : !sh -> !sh
  %aggr = vortex.max %normalized {dim = 2 : i64} : !sh -> !s
  vortex.topk %aggr into %o : !s into !o
}
