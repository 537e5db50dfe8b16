// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// learned_factorized_block_sparse_mla: vortex_torch's learned factorized
// block routing on an MLA flow's latent: LearnedDescriptor writes each
// block's descriptors, FactorScore scores them.
//
//   g_p[h m + j] = sum_s Wt[l, h, s, j] latent_s Wk[l, h]  [H*m, r] (cache side)
//   score(p)     = sum_h max_j < Wq[l, h]^T q_h , g_p[h m + j] > (indexer side)
//
// Python (python/vortex/flows/learned_factorized_block_sparse_mla.py;
// vortex_torch's LearnedFactorizedBlockSparseMLA):
//   create_cache    -> {"descriptors": (H * m, r)}
//   forward_cache   : LearnedDescriptor(Wt, Wk, H, m, r)(cache["latent"],
//                                                        cache["descriptors"])
//   forward_indexer : score = FactorScore(Wq, H, m, r)(q, cache["descriptors"])
//                     topK()(score, o)
// Here the identity weights (no checkpoint): m = 1, r = d = 576, Wt the
// block's mean, Wk = Wq = I per head. Both projections, descriptor_proj
// [H*r, d] and score_proj [H*m*r, d], are [11520, 576]: parameters over the
// tile bound, streamed by the standalone vortex.learned_descriptor and the
// grouped GeMM (docs/contract.md, "Bounds"). descriptor_mix is [H*m, bs].
// Per-layer weights are bound at load; the layer is chosen per call.
//
// Knobs: GLM-4.7-Flash's MLA shape (20 query heads over one latent of
// 512 + 64 = 576 channels), blocks and pages of 32, the reference top-k
// knobs.

!kv  = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g   = !vortex.vtensor<?x20x576xbf16, #vortex.format<paged>>
!wm  = !vortex.vtensor<1x20x32xbf16, #vortex.format<parameter>>
!wp  = !vortex.vtensor<1x11520x576xbf16, #vortex.format<parameter>>
!wq  = !vortex.vtensor<1x11520x576xbf16, #vortex.format<parameter>>
!u1  = !vortex.vtensor<?x11520x1xbf16, #vortex.format<batched>>
!u   = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!sp  = !vortex.vtensor<?x20x576xbf16, #vortex.format<ragged>>
!s1  = !vortex.vtensor<?x20x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @learned_factorized_block_sparse_mla
// CHECK-SAME:  config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576, group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
// CHECK-SAME:  fields(descriptors = [20, 576]) params(score_proj = [11520, 576], descriptor_mix = [20, 32], descriptor_proj = [11520, 576])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %descriptors: {{.*}}, %score_proj: {{.*}}, %descriptor_mix: {{.*}}, %descriptor_proj: {{.*}}) {
// CHECK-NEXT:    vortex.learned_descriptor %k, %descriptor_mix, %descriptor_proj into %descriptors {heads = 20 : i64} : <?x32x576xbf16, #vortex.format<paged>>, <1x20x32xbf16, #vortex.format<parameter>>, <1x11520x576xbf16, #vortex.format<parameter>> into <?x20x576xbf16, #vortex.format<paged>>
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %descriptors: {{.*}}, %score_proj: {{.*}}, %descriptor_mix: {{.*}}, %descriptor_proj: {{.*}}) {
// CHECK-NEXT:    %[[U1:.+]] = vortex.gemm %q, %score_proj {groups = 20 : i64} : {{.*}} -> !vortex.vtensor<?x11520x1xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[U:.+]] = vortex.reshape %[[U1]] : {{.*}} -> <?x20x576xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[SP:.+]] = vortex.multiply %[[U]], %descriptors : {{.*}} -> !vortex.vtensor<?x20x576xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[S1:.+]] = vortex.sum %[[SP]] {dim = 2 : i64}
// CHECK:         vortex.max {{.*}} {dim = 2 : i64}
// CHECK-NEXT:    %[[S:.+]] = vortex.sum {{.*}} {dim = 1 : i64}
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @learned_factorized_block_sparse_mla
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(descriptors = [20, 576])
    params(score_proj = [11520, 576],
           descriptor_mix = [20, 32], descriptor_proj = [11520, 576])
cache(%k: !kv, %v: !kv, %descriptors: !g, %score_proj: !wq,
      %descriptor_mix: !wm, %descriptor_proj: !wp) {
  // LearnedDescriptor(Wt, Wk, H, m, r)(cache["latent"], cache["descriptors"]):
  // each block's tokens mixed into H*m landmarks, each compressed to r
  // channels by its head's Wk                            [H*m, r]
  vortex.learned_descriptor %k, %descriptor_mix, %descriptor_proj
      into %descriptors {heads = 20 : i64} : !kv, !wm, !wp into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %descriptors: !g, %score_proj: !wq,
        %descriptor_mix: !wm, %descriptor_proj: !wp) {
  // score = FactorScore(Wq, H, m, r)(q, cache["descriptors"]):
  // u_h = Wq[l, h]^T q_h once per landmark: each head's rows
  // of P[l] with q_h                                 [B, H*m*r, 1]
  %u1 = vortex.gemm %q, %score_proj {groups = 20 : i64} : (!q, !wq) -> !u1
  %u = vortex.reshape %u1 : !u1 -> !u
  // < u_h, g[h, j] > for each landmark j of head h  [S, H*m, 1]
  %sprod = vortex.multiply %u, %descriptors : (!u, !g) -> !sp
  %s1 = vortex.sum %sprod {dim = 2 : i64} : !sp -> !s1
  // max over the m = 1 landmarks, sum over the heads     [S, 1, 1]
  %shm = vortex.reshape %s1 : !s1 -> !s1
  %sh = vortex.max %shm {dim = 2 : i64} : !s1 -> !s1
  %score = vortex.sum %sh {dim = 1 : i64} : !s1 -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
