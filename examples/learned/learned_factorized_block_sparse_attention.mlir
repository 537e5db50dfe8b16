// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// learned_factorized_block_sparse_attention: vortex_torch's learned
// factorized block score, the MHA twin of its learned_factorized_block_sparse_mla:
// LearnedDescriptor writes each block's descriptors, FactorScore scores them.
//
//   g_p[h m + j] = sum_s Wt[l, h, s, j] k_s Wk[l, h]     [H*m, r] (cache side)
//   score(p)     = sum_h max_j < Wq[l, h]^T q_h , g_p[h m + j] > (indexer side)
//
// Python (python/vortex/flows/learned_factorized_block_sparse_attention.py):
//   create_cache    -> {"descriptors": (H * m, r)}       H = 8, m = 2, r = 8
//   forward_cache   : LearnedDescriptor(Wt, Wk, H, m, r)(cache["k"],
//                                                        cache["descriptors"])
//   forward_indexer : score = FactorScore(Wq, H, m, r)(q, cache["descriptors"])
//                     topK()(score, o)
// LearnedDescriptor traces to one vortex.learned_descriptor (its own
// kernel per block) with two derived parameters (docs/python.md "Learned
// ops"), both bound per layer: descriptor_mix [H*m, bs] (mix[h m + j, s] =
// Wt[l, h, s, j]) mixes the tokens into m landmarks per head,
// descriptor_proj [H*r, D] (proj[h r + i, e] = Wk[l, h, e, i]) compresses
// each landmark's channels with its head's weight.
// FactorScore as in factor_score_block_sparse_attention.mlir.
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g   = !vortex.vtensor<?x16x8xbf16, #vortex.format<paged>>
!wm  = !vortex.vtensor<1x16x16xbf16, #vortex.format<parameter>>
!wp  = !vortex.vtensor<1x64x128xbf16, #vortex.format<parameter>>
!wq  = !vortex.vtensor<1x128x128xbf16, #vortex.format<parameter>>
!u1  = !vortex.vtensor<?x128x1xbf16, #vortex.format<batched>>
!u   = !vortex.vtensor<?x16x8xbf16, #vortex.format<batched>>
!sp  = !vortex.vtensor<?x16x8xbf16, #vortex.format<ragged>>
!s1  = !vortex.vtensor<?x16x1xbf16, #vortex.format<ragged>>
!shm = !vortex.vtensor<?x8x2xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @learned_factorized_block_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(descriptors = [16, 8]) params(score_proj = [128, 128], descriptor_mix = [16, 16], descriptor_proj = [64, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %descriptors: {{.*}}, %score_proj: {{.*}}, %descriptor_mix: {{.*}}, %descriptor_proj: {{.*}}) {
// CHECK-NEXT:    vortex.learned_descriptor %k, %descriptor_mix, %descriptor_proj into %descriptors {heads = 8 : i64} : <?x16x128xbf16, #vortex.format<paged>>, <1x16x16xbf16, #vortex.format<parameter>>, <1x64x128xbf16, #vortex.format<parameter>> into <?x16x8xbf16, #vortex.format<paged>>
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %descriptors: {{.*}}, %score_proj: {{.*}}, %descriptor_mix: {{.*}}, %descriptor_proj: {{.*}}) {
// CHECK-NEXT:    %[[U1:.+]] = vortex.gemm %q, %score_proj {groups = 8 : i64}
// CHECK:         vortex.topk {{.*}} into %o
// CHECK-NEXT:  }
vortex.flow @learned_factorized_block_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(descriptors = [16, 8])
    params(score_proj = [128, 128],
           descriptor_mix = [16, 16], descriptor_proj = [64, 128])
cache(%k: !kv, %v: !kv, %descriptors: !g, %score_proj: !wq,
      %descriptor_mix: !wm, %descriptor_proj: !wp) {
  // LearnedDescriptor(Wt, Wk, H, m, r)(cache["k"], cache["descriptors"]):
  // each block's tokens mixed into H*m landmarks, each compressed to r
  // channels by its head's Wk                            [H*m, r]
  vortex.learned_descriptor %k, %descriptor_mix, %descriptor_proj
      into %descriptors {heads = 8 : i64} : !kv, !wm, !wp into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %descriptors: !g, %score_proj: !wq,
        %descriptor_mix: !wm, %descriptor_proj: !wp) {
  // score = FactorScore(Wq, H, m, r)(q, cache["descriptors"]):
  // u_h = Wq[l, h]^T q_h once per landmark: each head's rows
  // of P[l] with q_h                                 [B, H*m*r, 1]
  %u1 = vortex.gemm %q, %score_proj {groups = 8 : i64} : (!q, !wq) -> !u1
  %u = vortex.reshape %u1 : !u1 -> !u
  // < u_h, g[h, j] > for each landmark j of head h  [S, H*m, 1]
  %sprod = vortex.multiply %u, %descriptors : (!u, !g) -> !sp
  %s1 = vortex.sum %sprod {dim = 2 : i64} : !sp -> !s1
  // max over the m landmarks, sum over the heads         [S, 1, 1]
  %shm = vortex.reshape %s1 : !s1 -> !shm
  %sh = vortex.max %shm {dim = 2 : i64} : !shm -> !sh
  %score = vortex.sum %sh {dim = 1 : i64} : !sh -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
