// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// gqa_h2o_token_sparse_attention: token-level H2O with per-head attention:
// each query head's attention probabilities over the row's tokens, max over
// the query group (a token is kept if any head of the group attends to it),
// then the same decayed accumulation into "hh_score" as
// h2o_token_sparse_attention. page_size = 1 (asserted by the Python),
// decay = 0.984375, scale = 128 ** -0.5 = 0.0883883461 (as f32).
//
//   a_t(p, h) = softmax_p( scale * < q_h , k_p > )
//   score(p)  = max_h a_t(p, h) + decay * hh_{t-1}(p);   hh_t = score
//
// Python (vortex_torch/flow/algorithms.py@d3a982f,
// GQAH2OTokenSparseAttention), paraphrased:
//   create_cache    -> {"hh_score": (1, 1)}; asserts page_size == 1;
//                      softmax.scale = head_dim ** -0.5
//   forward_cache   : CFill(alpha=0.0)(cache["hh_score"])
//   forward_indexer : attn     = GeMM()(q, cache["k"])               # [S,1,H_q]
//                     Softmax(dim=0, scale)(attn)            # "in place" in Gen-1
//                     attn_agg = Max(dim=2)(attn)                    # [S,1,1]
//                     score    = Add(alpha=1.0, beta=decay)(attn_agg, cache["hh_score"])
//                     Save()(score, cache["hh_score"])
//                     topK()(score, o)
// In SSA the softmax result is what the Max consumes. The Add reads the
// paged field directly (no Load), as the Python does.
//
// Knobs: the reference knobs except block_size = page_size = 1; head_dim
// 128, group_size 8.

!kv  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!hh  = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!sa  = !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @gqa_h2o_token_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 1, page_size = 1, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(hh_score = [1, 1])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %hh_score: {{.*}}) {
// CHECK-NEXT:    vortex.fill %hh_score : <?x1x1xbf16, #vortex.format<paged>>
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %hh_score: {{.*}}) {
// CHECK-NEXT:    %[[ATTN:.+]] = vortex.gemm %q, %k : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[P:.+]] = vortex.softmax %[[ATTN]] {scale = 0.0883883461 : f32} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[AGG:.+]] = vortex.max %[[P]] {dim = 2 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[S:.+]] = vortex.add %[[AGG]], %hh_score {beta = 9.843750e-01 : f32}
// CHECK-NEXT:    vortex.save %[[S]] into %hh_score
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @gqa_h2o_token_sparse_attention
    config = #vortex.config<block_size = 1, page_size = 1, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(hh_score = [1, 1])
cache(%k: !kv, %v: !kv, %hh_score: !hh) {
  // CFill(alpha=0.0)(cache["hh_score"])
  vortex.fill %hh_score {value = 0.000000e+00 : f32} : !hh
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %hh_score: !hh) {
  // attn = GeMM()(q, cache["k"])                         [S, 1, H_q] ragged
  %attn = vortex.gemm %q, %k : (!q, !kv) -> !sa
  // Softmax(dim=0, scale=head_dim**-0.5)(attn), per head over the tokens
  %probs = vortex.softmax %attn {scale = 0.0883883461 : f32} : !sa -> !sa
  // attn_agg = Max(dim=2)(attn)                          [S, 1, 1]
  %attn_agg = vortex.max %probs {dim = 2 : i64} : !sa -> !s
  // score = Add(alpha=1.0, beta=decay)(attn_agg, cache["hh_score"])   (ragged, paged) -> ragged
  %score = vortex.add %attn_agg, %hh_score {alpha = 1.000000e+00 : f32, beta = 9.843750e-01 : f32}
      : (!s, !hh) -> !s
  // Save()(score, cache["hh_score"])
  vortex.save %score into %hh_score : !s into !hh
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
