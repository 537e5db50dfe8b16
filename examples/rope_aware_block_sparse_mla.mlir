// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// rope_aware_block_sparse_mla: centroid block top-k on an MLA flow's fused
// latent latent_t = [kv_c_t | k_pe_t]; the absorbed query q_h =
// [q_nope_out_h | q_pe_h] makes one dot product the whole decode logit:
//
//   c_p      = mean_{t in p} latent_t
//   score(p) = < mean_h q_h , c_p > = < q_nope , c_p^kv > + < q_pe , c_p^pe >
//
// Python (vortex_torch/flow/algorithms_mla.py, RopeAwareBlockSparseMLA),
// paraphrased:
//   create_cache    -> {"centroids": (1, kv_lora_rank + qk_rope_head_dim)}
//   forward_cache   : CMean(dim=1)(cache["latent"], cache["centroids"])
//   forward_indexer : q_mean = Mean(dim=1)(q)                        # [B,1,576]
//                     score  = GeMM()(q_mean, cache["centroids"])    # [S,1,1]
//                     topK()(score, o)
//
// Knobs: GLM-4.7-Flash's MLA shape (20 query heads over one latent of
// kv_lora_rank 512 + qk_rope_head_dim 64 = 576 channels; k is the latent,
// v the same pool and unused), blocks and pages of 32 tokens (vortex_torch's
// MLA runs), the reference top-k knobs.

!kv  = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x576xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x576xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x576xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @rope_aware_block_sparse_mla
// CHECK-SAME:  config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576, group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
// CHECK-SAME:  fields(centroids = [1, 576])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64} : <?x32x576xbf16, #vortex.format<paged>> -> <?x1x576xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : <?x20x576xbf16, #vortex.format<batched>> -> <?x1x576xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[QM]], %centroids : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @rope_aware_block_sparse_mla
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(centroids = [1, 576])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  // CMean(dim=1)(cache["latent"], cache["centroids"])   [1,32,576] -> [1,1,576]
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  // q_mean = Mean(dim=1)(q)                              [B, 1, 576] batched
  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // score = GeMM()(q_mean, cache["centroids"])           [S, 1, 1] ragged
  %score = vortex.gemm %q_mean, %centroids : (!qm, !c) -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
