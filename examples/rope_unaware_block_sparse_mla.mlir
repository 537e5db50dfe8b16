// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// rope_unaware_block_sparse_mla: rope_aware_block_sparse_mla without the
// RoPE term. The query's RoPE channels [512, 576) are zeroed by a mask of
// ones on [0, 512) (MaskSlice writes positions, ignoring its input's
// values), so the full-width dot keeps the latent term only:
//
//   c_p      = mean_{t in p} latent_t
//   score(p) = < mean_h q_nope_out_h , c_p^kv >
//
// Python (vortex_torch/flow/algorithms_mla.py, RopeUnawareBlockSparseMLA;
// NOPE_DIM = 512, asserted in create_cache), paraphrased:
//   create_cache    -> {"centroids": (1, kv_lora_rank + qk_rope_head_dim)}
//   forward_cache   : CMean(dim=1)(cache["latent"], cache["centroids"])
//   forward_indexer : q_mean = Mean(dim=1)(q)                                  # [B,1,576]
//                     mask   = MaskSlice(0, 512, dim=2, alpha=1, beta=0)(q_mean)
//                     q_nope = Multiply()(q_mean, mask)
//                     score  = GeMM()(q_nope, cache["centroids"])              # [S,1,1]
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

// CHECK-LABEL: vortex.flow @rope_unaware_block_sparse_mla
// CHECK-SAME:  config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576, group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
// CHECK-SAME:  fields(centroids = [1, 576])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64} : <?x32x576xbf16, #vortex.format<paged>> -> <?x1x576xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : {{.*}} -> <?x1x576xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[M:.+]] = vortex.mask_slice %[[QM]] {dim = 2 : i64, end = 512 : i64, start = 0 : i64}
// CHECK-NEXT:    %[[N:.+]] = vortex.multiply %[[QM]], %[[M]]
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[N]], %centroids : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @rope_unaware_block_sparse_mla
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
  // mask = MaskSlice(start=0, end=512, dim=2, alpha=1.0, beta=0.0)(q_mean)
  %mask = vortex.mask_slice %q_mean {start = 0 : i64, end = 512 : i64, dim = 2 : i64, alpha = 1.0 : f32, beta = 0.0 : f32} : !qm -> !qm
  // q_nope = Multiply()(q_mean, mask)                    RoPE channels zeroed
  %q_nope = vortex.multiply %q_mean, %mask : (!qm, !qm) -> !qm
  // score = GeMM()(q_nope, cache["centroids"])           [S, 1, 1] ragged
  %score = vortex.gemm %q_nope, %centroids : (!qm, !c) -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
