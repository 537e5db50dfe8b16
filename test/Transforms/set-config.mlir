// RUN: vortex-opt %examples/lserve_sparse_attention.mlir --vortex-set-config="group-size=5 topk-val=64" | FileCheck %s
// RUN: vortex-opt %examples/gqa_block_sparse_attention.mlir --vortex-set-config="group-size=5" | FileCheck %s --check-prefix=GQA
// RUN: vortex-opt %examples/lserve_sparse_attention.mlir --vortex-set-config="group-size=5" | vortex-opt --vortex-pad --vortex-mask-padding --vortex-to-cpu -o /dev/null
// RUN: not vortex-opt %s --vortex-set-config="group-size=3" 2>&1 | FileCheck %s --check-prefix=ERR
// Multi-token queries: q = [?, T x G, D]; a later group-size keeps T.
// RUN: vortex-opt %examples/gqa_quest_sparse_attention.mlir --vortex-set-config="query-tokens=4" | FileCheck %s --check-prefix=T4
// RUN: vortex-opt %examples/gqa_quest_sparse_attention.mlir --vortex-set-config="query-tokens=4" | vortex-opt --vortex-set-config="group-size=5" | FileCheck %s --check-prefix=T4G5
// T4: indexer(%q: !vortex.vtensor<?x32x128xbf16, #vortex.format<batched>>
// T4: vortex.multiply %q, %max : (!vortex.vtensor<?x32x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x32x128xbf16, #vortex.format<ragged>>
// T4G5: group_size = 5
// T4G5: indexer(%q: !vortex.vtensor<?x20x128xbf16, #vortex.format<batched>>

// A grouped GeMM (FactorScore) keeps its result [Ny, Nx / groups].
// RUN: vortex-opt %examples/learned/factor_score_block_sparse_attention.mlir --vortex-set-config="topk-val=10" | FileCheck %s --check-prefix=FS
// FS: topk_val = 10
// FS: vortex.gemm %q, %score_proj {groups = 8 : i64} : {{.*}} -> !vortex.vtensor<?x128x1xbf16, #vortex.format<batched>>

// LServe at G = 5: q is [?, 5, 128], the Kronecker product with the 4
// sub-block envelopes is [?, 20, 128], and the per-head sums follow.
// CHECK: group_size = 5, topk_val = 64
// CHECK: indexer(%q: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
// CHECK: vortex.kron {{.*}} -> !vortex.vtensor<?x20x128xbf16, #vortex.format<ragged>>
// CHECK: vortex.sum {{.*}} -> <?x20x1xbf16, #vortex.format<ragged>>
// CHECK: vortex.max {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>

// GQA block: the score is [?, 1, G] before the max over heads.
// GQA: vortex.gemm {{.*}} -> !vortex.vtensor<?x1x5xbf16, #vortex.format<ragged>>
// GQA: vortex.softmax {{.*}} -> <?x1x5xbf16, #vortex.format<ragged>>

// A reshape keeps its declared shape: 8 heads x 1 cannot become 3 x 1.
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!s8 = !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
!s2 = !vortex.vtensor<?x2x4xbf16, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @reshaped
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %g = vortex.gemm %q, %centroids : (!q, !c) -> !s8
  %r = vortex.reshape %g : !s8 -> !s2
  %a = vortex.max %r {dim = 1 : i64} : !s2 -> !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>>
  %b = vortex.max %a {dim = 2 : i64} : !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>> -> !s
  vortex.topk %b into %o : !s into !o
}
// ERR: error: 'vortex.reshape' op reshape must keep the inner element count
