// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// learned_block_sparse_mla: vortex_torch's learned per-layer bilinear block
// routing on an MLA flow's latent, built from existing ops and one
// Parameter. The per-head scorer sum_h (Wq[l, h]^T q_h)^T (Wk[l, h]^T c_p)
// folds into W[l] = [Wk[l, h] Wq[l, h]^T]_h [d, H*d]:
//
//   c_p      = mean_{t in p} latent_t
//   V        = W[l] q_flat            q_flat = [q_1 | ... | q_H]
//   score(p) = < V , c_p >
//
// Python (python/vortex/flows/learned_block_sparse_mla.py; vortex_torch's
// algorithms_learned_mla.py, LearnedBlockSparseMLA):
//   create_cache    -> {"centroids": (1, kv_lora_rank + qk_rope_head_dim)}
//   forward_cache   : CMean(dim=1)(cache["latent"], cache["centroids"])
//   forward_indexer : q_flat = Reshape(-1, 1, H*d)(q)                # [B,1,11520]
//                     V      = GeMM()(q_flat, W)                    # [B,576,1]
//                     V      = Reshape(-1, 1, d)(V)                 # [B,1,576]
//                     score  = GeMM()(V, cache["centroids"])        # [S,1,1]
//                     topK()(score, o)
// W is [576, 11520]: a parameter over the tile bound, which only GeMM's
// parameter path may read; it streams W from memory (docs/contract.md,
// "Bounds"). Per-layer weights are bound at load; the layer is chosen per
// call.
//
// Knobs: GLM-4.7-Flash's MLA shape (20 query heads over one latent of
// 512 + 64 = 576 channels), blocks and pages of 32, the reference top-k
// knobs.

!kv  = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x576xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x576xbf16, #vortex.format<ragged>>
!w   = !vortex.vtensor<1x576x11520xbf16, #vortex.format<parameter>>
!qf  = !vortex.vtensor<?x1x11520xbf16, #vortex.format<batched>>
!vt  = !vortex.vtensor<?x576x1xbf16, #vortex.format<batched>>
!vq  = !vortex.vtensor<?x1x576xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @learned_block_sparse_mla
// CHECK-SAME:  config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576, group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
// CHECK-SAME:  fields(centroids = [1, 576]) params(W = [576, 11520])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %W: !vortex.vtensor<1x576x11520xbf16, #vortex.format<parameter>>) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %W: {{.*}}) {
// CHECK-NEXT:    %[[QF:.+]] = vortex.reshape %q : {{.*}} -> <?x1x11520xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[VT:.+]] = vortex.gemm %[[QF]], %W : {{.*}} -> !vortex.vtensor<?x576x1xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[V:.+]] = vortex.reshape %[[VT]] : {{.*}} -> <?x1x576xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[V]], %centroids : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @learned_block_sparse_mla
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(centroids = [1, 576]) params(W = [576, 11520])
cache(%k: !kv, %v: !kv, %centroids: !c, %W: !w) {
  // CMean(dim=1)(cache["latent"], cache["centroids"])
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %W: !w) {
  // q_flat = Reshape(-1, 1, H*d)(q)                      [B, 1, 11520]
  %q_flat = vortex.reshape %q : !q -> !qf
  // V = GeMM()(q_flat, W) (GeMM(x, y) = y x^T)           [B, 576, 1]
  %vt = vortex.gemm %q_flat, %W : (!qf, !w) -> !vt
  // V = Reshape(-1, 1, d)(V)                             [B, 1, 576]
  %query = vortex.reshape %vt : !vt -> !vq
  // score = GeMM()(V, cache["centroids"])                [S, 1, 1] ragged
  %score = vortex.gemm %query, %centroids : (!vq, !c) -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
