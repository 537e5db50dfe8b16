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
// LearnedDescriptor traces to existing ops with two derived parameters
// (docs/python.md "Learned ops"): descriptor_proj P[l] [H*m*r, D]
// (P[(h m + j) r + i, e] = Wk[l, h, e, i]) compresses the channels of every
// token, descriptor_mix T[l] [bs, H*m*r] (T[s, (h m + j) r + i] =
// bs Wt[l, h, s, j]) weights the tokens, whose mean is the descriptor.
// FactorScore as in factor_score_block_sparse_attention.mlir.
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g   = !vortex.vtensor<?x16x8xbf16, #vortex.format<paged>>
!wd  = !vortex.vtensor<1x128x128xbf16, #vortex.format<parameter>>
!wt  = !vortex.vtensor<1x16x128xbf16, #vortex.format<parameter>>
!tc  = !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
!t1  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!gr  = !vortex.vtensor<?x16x8xbf16, #vortex.format<ragged>>
!wp  = !vortex.vtensor<1x64x128xbf16, #vortex.format<parameter>>
!mu  = !vortex.vtensor<1x64x8xbf16, #vortex.format<parameter>>
!ms  = !vortex.vtensor<1x16x8xbf16, #vortex.format<parameter>>
!pr  = !vortex.vtensor<?x64x8xbf16, #vortex.format<batched>>
!u1  = !vortex.vtensor<?x64x1xbf16, #vortex.format<batched>>
!u   = !vortex.vtensor<?x8x8xbf16, #vortex.format<batched>>
!sp  = !vortex.vtensor<?x16x8xbf16, #vortex.format<ragged>>
!s1  = !vortex.vtensor<?x16x1xbf16, #vortex.format<ragged>>
!shm = !vortex.vtensor<?x8x2xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @learned_factorized_block_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(descriptors = [16, 8]) params(score_proj = [64, 128], score_umask = [64, 8], score_smask = [16, 8], descriptor_proj = [128, 128], descriptor_mix = [16, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %descriptors: {{.*}}, %score_proj: {{.*}}, %score_umask: {{.*}}, %score_smask: {{.*}}, %descriptor_proj: {{.*}}, %descriptor_mix: {{.*}}) {
// CHECK-NEXT:    %[[T:.+]] = vortex.gemm %descriptor_proj, %k : {{.*}} -> !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[TM:.+]] = vortex.multiply %[[T]], %descriptor_mix
// CHECK-NEXT:    %[[T1:.+]] = vortex.mean %[[TM]] {dim = 1 : i64}
// CHECK-NEXT:    %[[G:.+]] = vortex.reshape %[[T1]] : {{.*}} -> <?x16x8xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[G]] into %descriptors
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %descriptors: {{.*}}, %score_proj: {{.*}}, %score_umask: {{.*}}, %score_smask: {{.*}}, %descriptor_proj: {{.*}}, %descriptor_mix: {{.*}}) {
// CHECK-NEXT:    %[[P:.+]] = vortex.gemm %q, %score_proj
// CHECK:         vortex.topk {{.*}} into %o
// CHECK-NEXT:  }
vortex.flow @learned_factorized_block_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(descriptors = [16, 8])
    params(score_proj = [64, 128], score_umask = [64, 8], score_smask = [16, 8],
           descriptor_proj = [128, 128], descriptor_mix = [16, 128])
cache(%k: !kv, %v: !kv, %descriptors: !g, %score_proj: !wp,
      %score_umask: !mu, %score_smask: !ms, %descriptor_proj: !wd,
      %descriptor_mix: !wt) {
  // LearnedDescriptor(Wt, Wk, H, m, r)(cache["k"], cache["descriptors"]):
  // every token's channels compressed, once per landmark [bs, H*m*r]
  %tok = vortex.gemm %descriptor_proj, %k : (!wd, !kv) -> !tc
  // weighted by bs Wt[l, h, s, j], averaged over the tokens [1, H*m*r]
  %mixed = vortex.multiply %tok, %descriptor_mix : (!tc, !wt) -> !tc
  %g1 = vortex.mean %mixed {dim = 1 : i64} : !tc -> !t1
  %g = vortex.reshape %g1 : !t1 -> !gr
  vortex.write %g into %descriptors : !gr into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %descriptors: !g, %score_proj: !wp,
        %score_umask: !mu, %score_smask: !ms, %descriptor_proj: !wd,
        %descriptor_mix: !wt) {
  // score = FactorScore(Wq, H, m, r)(q, cache["descriptors"]):
  // every head pair P[l] q_h                             [B, H*r, H]
  %pairs = vortex.gemm %q, %score_proj : (!q, !wp) -> !pr
  // u_h = Wq[l, h]^T q_h: the pairs of the same head     [B, H*r, 1]
  %own = vortex.multiply %pairs, %score_umask : (!pr, !mu) -> !pr
  %u1 = vortex.sum %own {dim = 2 : i64} : !pr -> !u1
  %u = vortex.reshape %u1 : !u1 -> !u
  // < u_h', g[h, m] > for every head pair                [S, H*m, H]
  %spairs = vortex.gemm %u, %descriptors : (!u, !g) -> !sp
  // the same head's                                      [S, H*m, 1]
  %sown = vortex.multiply %spairs, %score_smask : (!sp, !ms) -> !sp
  %s1 = vortex.sum %sown {dim = 2 : i64} : !sp -> !s1
  // max over the m landmarks, sum over the heads         [S, 1, 1]
  %shm = vortex.reshape %s1 : !s1 -> !shm
  %sh = vortex.max %shm {dim = 2 : i64} : !shm -> !sh
  %score = vortex.sum %sh {dim = 1 : i64} : !sh -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
