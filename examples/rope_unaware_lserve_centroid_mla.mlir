// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// rope_unaware_lserve_centroid_mla: lserve_centroid_mla without the RoPE
// term: sub-block centroids (16 tokens, n_b = 2 per block of 32), a block
// scores as its best sub-block, on the latent channels only (the query's
// RoPE channels [512, 576) zeroed as in rope_unaware_block_sparse_mla):
//
//   c_{p,b}  = mean_{t in b} latent_t
//   score(p) = max_b < mean_h q_nope_out_h , c_{p,b}^kv >
//
// Python (vortex_torch/flow/algorithms_mla.py, RopeUnawareLServeCentroidMLA;
// NOPE_DIM = 512), paraphrased:
//   create_cache    -> {"centroids": (block_size // 16, kv_lora_rank + qk_rope_head_dim)}
//   forward_cache   : CMeanInterleave(dim=1, k=16)(cache["latent"], cache["centroids"])
//   forward_indexer : q_mean     = Mean(dim=1)(q)                              # [B,1,576]
//                     mask       = MaskSlice(0, 512, dim=2, alpha=1, beta=0)(q_mean)
//                     q_nope     = Multiply()(q_mean, mask)
//                     score      = GeMM()(q_nope, cache["centroids"])          # [S,n_b,1]
//                     page_score = Max(dim=1)(score)                           # [S,1,1]
//                     topK()(page_score, o)
//
// Knobs: GLM-4.7-Flash's MLA shape (20 query heads over one latent of
// kv_lora_rank 512 + qk_rope_head_dim 64 = 576 channels; k is the latent,
// v the same pool and unused), blocks and pages of 32 tokens (vortex_torch's
// MLA runs), the reference top-k knobs.

!kv  = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x2x576xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x2x576xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x576xbf16, #vortex.format<batched>>
!sb  = !vortex.vtensor<?x2x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @rope_unaware_lserve_centroid_mla
// CHECK-SAME:  config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576, group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
// CHECK-SAME:  fields(centroids = [2, 576])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean_interleave %k {dim = 1 : i64, factor = 16 : i64} : <?x32x576xbf16, #vortex.format<paged>> -> <?x2x576xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : {{.*}} -> <?x1x576xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[M:.+]] = vortex.mask_slice %[[QM]] {dim = 2 : i64, end = 512 : i64, start = 0 : i64}
// CHECK-NEXT:    %[[N:.+]] = vortex.multiply %[[QM]], %[[M]]
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[N]], %centroids : {{.*}} -> !vortex.vtensor<?x2x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[P:.+]] = vortex.max %[[S]] {dim = 1 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[P]] into %o
// CHECK-NEXT:  }
vortex.flow @rope_unaware_lserve_centroid_mla
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(centroids = [2, 576])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  // CMeanInterleave(dim=1, k=16)(cache["latent"], cache["centroids"])  [1,32,576] -> [1,2,576]
  %c = vortex.mean_interleave %k {dim = 1 : i64, factor = 16 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  // q_mean = Mean(dim=1)(q)                              [B, 1, 576] batched
  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // mask = MaskSlice(start=0, end=512, dim=2, alpha=1.0, beta=0.0)(q_mean)
  %mask = vortex.mask_slice %q_mean {start = 0 : i64, end = 512 : i64, dim = 2 : i64, alpha = 1.0 : f32, beta = 0.0 : f32} : !qm -> !qm
  // q_nope = Multiply()(q_mean, mask)                    RoPE channels zeroed
  %q_nope = vortex.multiply %q_mean, %mask : (!qm, !qm) -> !qm
  // score = GeMM()(q_nope, cache["centroids"])           [S, 2, 1] ragged
  %score = vortex.gemm %q_nope, %centroids : (!qm, !c) -> !sb
  // page_score = Max(dim=1)(score)                       [S, 1, 1]
  %page_score = vortex.max %score {dim = 1 : i64} : !sb -> !s
  // topK()(page_score, o)
  vortex.topk %page_score into %o : !s into !o
}
