// learned_query_param: block top-k routing with learned, batch-shared
// weights (vortex_torch `Parameter`): per-channel key weights on the cache
// side and four learned queries on the indexer side. The weights are step
// arguments of both steps, bound at each call (docs/contract.md,
// "Parameters"); the compiled flow never writes them.
//
//   c_p      = mean_{t in p} (k_t * scale)            (cache side, per block)
//   m_r      = mean_h q_h                             (per row)
//   a_r[j]   = < w_j , m_r >                          GeMM(m, w): the
//                                                     compute_param path
//   score(p) = max_j  < m_r * w_j , c_p > * a_r[j]    (indexer side, per step)
//
// with scale [1, 128] and w [4, 128] (w_j its row j), p a block of row r.
// Every op is vortex_torch's (Multiply, Mean, GeMM, Transpose, Max, topK);
// the parameters are read at row 0 by every row and block.
//
// Arguments (manifest order): cache step k, v, centroids, w, scale,
// block_ids; indexer step q, k, v, centroids, w, scale, dense_kv_indptr,
// dense_kv_indices, sparse_kv_indptr, sparse_kv_indices. w and scale have
// role "parameter" and shape [1, 4, 128] / [1, 1, 128] (bf16 on the GPU,
// f32 on the CPU).
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!kr  = !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!w   = !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>
!sc  = !vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!qw  = !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
!a   = !vortex.vtensor<?x4x1xbf16, #vortex.format<batched>>
!at  = !vortex.vtensor<?x1x4xbf16, #vortex.format<batched>>
!s4  = !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

vortex.flow @learned_query_param
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128]) params(w = [4, 128], scale = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c, %w: !w, %scale: !sc) {
  // Multiply()(cache["k"], scale): a parameter broadcasts to every block.
  %ks = vortex.multiply %k, %scale : (!kv, !sc) -> !kr
  // CMean(dim=1)(ks, cache["centroids"])
  %c = vortex.mean %ks {dim = 1 : i64} : !kr -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %w: !w, %scale: !sc) {
  // m = Mean(dim=1)(q)                                  [B, 1, D] batched
  %m = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // The learned queries m * w_j: batched times a parameter stays batched.
  %qw = vortex.multiply %m, %w : (!qm, !w) -> !qw
  // Their scores against the centroids                  [S, 1, 4] ragged
  %s4 = vortex.gemm %qw, %centroids : (!qw, !c) -> !s4
  // a = GeMM()(m, w) (w is y: standalone, batched)      [B, 4, 1] batched
  %a = vortex.gemm %m, %w : (!qm, !w) -> !a
  %at = vortex.transpose %a : !a -> !at
  // Each learned query's score weighed by its activation, the best of four.
  %sw = vortex.multiply %s4, %at : (!s4, !at) -> !s4
  %score = vortex.max %sw {dim = 2 : i64} : !s4 -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
