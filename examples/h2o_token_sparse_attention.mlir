// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// h2o_token_sparse_attention: token-level H2O (arXiv 2306.14048) with the
// heavy-hitter score accumulated across decode steps. page_size = 1 (one
// token per block, asserted by the Python create_cache), so block-level ops
// are token-level ops; the running score lives in the "hh_score" field, is
// zeroed when the token's block completes, and is updated with vortex.save
// (needs disable_radix_cache). decay = 0.984375 (1 - 2^-6),
// scale = head_dim ** -0.5 = 128 ** -0.5 = 0.0883883461 (as f32).
//
//   a_t(p)   = softmax_p( scale * < mean_h q_h , k_p > )
//   score(p) = a_t(p) + decay * hh_{t-1}(p);   hh_t = score
//
// Python (vortex_torch/flow/algorithms.py@d3a982f, H2OTokenSparseAttention;
// a Gen-1 flow), paraphrased:
//   create_cache    -> {"hh_score": (1, 1)}; asserts page_size == 1;
//                      softmax.scale = head_dim ** -0.5
//   forward_cache   : CFill(alpha=0.0)(cache["hh_score"])
//   forward_indexer : q_mean = q.mean(dim=1, keepdim=True)   # native torch -> vortex.mean
//                     attn   = GeMV()(q_mean, cache["k"])            # [S,1,1] logits
//                     Softmax(dim=0, scale)(attn)            # "in place" in Gen-1
//                     score  = Add(alpha=1.0, beta=decay)(attn, cache["hh_score"])
//                     Save()(score, cache["hh_score"])
//                     topK()(score, o)
// The Gen-1 softmax is called for its in-place effect; in SSA its result is
// what the Add consumes (the docstring: H2O accumulates probabilities). The
// Add reads the paged field cache["hh_score"] directly (no Load), exactly as
// the Python does; that read sees the value before this step's Save.
//
// Knobs: the reference knobs except block_size = page_size = 1; head_dim
// 128, group_size 8.

!kv  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!hh  = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @h2o_token_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 1, page_size = 1, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(hh_score = [1, 1])
// CHECK-NEXT:  cache(%k: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, %v: {{.*}}, %hh_score: !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>) {
// CHECK-NEXT:    vortex.fill %hh_score : <?x1x1xbf16, #vortex.format<paged>>
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %hh_score: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : {{.*}} -> <?x1x128xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[ATTN:.+]] = vortex.gemv %[[QM]], %k : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[P:.+]] = vortex.softmax %[[ATTN]] {scale = 0.0883883461 : f32}
// CHECK-NEXT:    %[[S:.+]] = vortex.add %[[P]], %hh_score {beta = 9.843750e-01 : f32} : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.save %[[S]] into %hh_score
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @h2o_token_sparse_attention
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
  // q_mean = q.mean(dim=1, keepdim=True)                 [B, 1, D] batched
  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // attn = GeMV()(q_mean, cache["k"])                    [S, 1, 1] ragged
  %attn = vortex.gemv %q_mean, %k : (!qm, !kv) -> !s
  // Softmax(dim=0, scale=head_dim**-0.5)(attn)
  %probs = vortex.softmax %attn {scale = 0.0883883461 : f32} : !s -> !s
  // score = Add(alpha=1.0, beta=decay)(attn, cache["hh_score"])   (ragged, paged) -> ragged
  %score = vortex.add %probs, %hh_score {alpha = 1.000000e+00 : f32, beta = 9.843750e-01 : f32}
      : (!s, !hh) -> !s
  // Save()(score, cache["hh_score"])
  vortex.save %score into %hh_score : !s into !hh
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
