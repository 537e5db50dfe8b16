// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// running_avg_block_sparse: centroid routing on an exponentially decayed
// running score kept across decode steps (the Save/Load example; needs
// disable_radix_cache). ALPHA = 0.5.
//
//   r_t(p) = ALPHA * r_{t-1}(p) + < mean_h q_{h,t} , c_p >,   r = 0 when p completes
//
// Python (vortex_torch/flow/algorithms.py, RunningAvgBlockSparse; Rockyeast
// 6eaddd7), paraphrased:
//   create_cache    -> {"centroids": (1, head_dim), "running_score": (1, 1)}
//   forward_cache   : CMean(dim=1)(cache["k"], cache["centroids"])
//                     CFill(alpha=0.0)(cache["running_score"])   # pages are recycled uncleared
//   forward_indexer : q_mean  = Mean(dim=1)(q)                       # [B,1,D]
//                     current = GeMM()(q_mean, cache["centroids"])   # [S,1,1]
//                     last    = Load()(cache["running_score"])       # previous step's value
//                     running = Add(alpha=0.5, beta=1.0)(last, current)
//                     Save()(running, cache["running_score"])
//                     topK()(running, o)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!rs  = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @running_avg_block_sparse
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(centroids = [1, 128], running_score = [1, 1])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %running_score: !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:    vortex.fill %running_score : <?x1x1xbf16, #vortex.format<paged>>
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %running_score: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : {{.*}} -> <?x1x128xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[CUR:.+]] = vortex.gemm %[[QM]], %centroids : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[LAST:.+]] = vortex.load %running_score : <?x1x1xbf16, #vortex.format<paged>> -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[RUN:.+]] = vortex.add %[[LAST]], %[[CUR]] {alpha = 5.000000e-01 : f32}
// CHECK-NEXT:    vortex.save %[[RUN]] into %running_score
// CHECK-NEXT:    vortex.topk %[[RUN]] into %o
// CHECK-NEXT:  }
vortex.flow @running_avg_block_sparse
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], running_score = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %running_score: !rs) {
  // CMean(dim=1)(cache["k"], cache["centroids"])
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
  // CFill(alpha=0.0)(cache["running_score"])
  vortex.fill %running_score {value = 0.000000e+00 : f32} : !rs
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %running_score: !rs) {
  // q_mean = Mean(dim=1)(q)                              [B, 1, D] batched
  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // current = GeMM()(q_mean, cache["centroids"])         [S, 1, 1] ragged
  %current = vortex.gemm %q_mean, %centroids : (!qm, !c) -> !s
  // last_running = Load()(cache["running_score"])        [S, 1, 1] ragged
  %last = vortex.load %running_score : !rs -> !s
  // running = Add(alpha=0.5, beta=1.0)(last_running, current)
  %running = vortex.add %last, %current {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32}
      : (!s, !s) -> !s
  // Save()(running, cache["running_score"])
  vortex.save %running into %running_score : !s into !rs
  // topK()(running, o)
  vortex.topk %running into %o : !s into !o
}
