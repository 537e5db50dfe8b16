// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// venergy_gated_centroid: centroid routing gated by the block's mean value
// norm ("value energy"): a block whose keys match the query but whose values
// are small is pushed down.
//
//   c_p      = mean_{t in p} k_t
//   e_p      = mean_{t in p} || v_t ||_2
//   score(p) = < mean_h q_h , c_p > * e_p
//
// Python (vortex_torch/flow/algorithms.py, VEnergyGatedCentroid; Rockyeast
// 6eaddd7), paraphrased:
//   create_cache    -> {"centroids": (1, head_dim), "v_energy": (1, 1)}
//   forward_cache   : CMean(dim=1)(cache["k"], cache["centroids"])
//                     v_tok = CL2Norm(dim=2)(cache["v"], None)       # [1,block,1] intermediate
//                     CMean(dim=1)(v_tok, cache["v_energy"])         # [1,1,1]
//   forward_indexer : q_mean = Mean(dim=1)(q)                        # [B,1,D]
//                     dot    = GeMM()(q_mean, cache["centroids"])    # [S,1,1]
//                     score  = Multiply()(dot, cache["v_energy"])    # [S,1,1]
//                     topK()(score, o)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!e   = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!vt  = !vortex.vtensor<?x16x1xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @venergy_gated_centroid
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(centroids = [1, 128], v_energy = [1, 1])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %v_energy: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:    %[[VT:.+]] = vortex.l2norm %v {dim = 2 : i64} : <?x16x128xbf16, #vortex.format<paged>> -> <?x16x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[VE:.+]] = vortex.mean %[[VT]] {dim = 1 : i64} : <?x16x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[VE]] into %v_energy
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %v_energy: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64}
// CHECK-NEXT:    %[[DOT:.+]] = vortex.gemm %[[QM]], %centroids : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[S:.+]] = vortex.multiply %[[DOT]], %v_energy : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @venergy_gated_centroid
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], v_energy = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %v_energy: !e) {
  // CMean(dim=1)(cache["k"], cache["centroids"])
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
  // v_tok = CL2Norm(dim=2)(cache["v"], None)             [1, 16, 1] ragged
  %v_tok = vortex.l2norm %v {dim = 2 : i64} : !kv -> !vt
  // CMean(dim=1)(v_tok, cache["v_energy"])               [1, 1, 1]
  %energy = vortex.mean %v_tok {dim = 1 : i64} : !vt -> !s
  vortex.write %energy into %v_energy : !s into !e
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %v_energy: !e) {
  // q_mean = Mean(dim=1)(q)                              [B, 1, D] batched
  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // dot = GeMM()(q_mean, cache["centroids"])             [S, 1, 1] ragged
  %dot = vortex.gemm %q_mean, %centroids : (!qm, !c) -> !s
  // score = Multiply()(dot, cache["v_energy"])           [S, 1, 1]
  %score = vortex.multiply %dot, %v_energy : (!s, !e) -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
