// RUN: vortex-opt %s | vortex-opt | FileCheck %s
// RUN: vortex-opt %s --mlir-print-op-generic | vortex-opt | FileCheck %s
// RUN: vortex-opt %s --vortex-fuse | FileCheck %s --check-prefix=FUSE

// The two ops behind vortex_torch's learned factorized score (docs/python.md,
// "Learned ops"): a grouped GeMM (FactorScore's per-head u_h = Wq[h]^T q_h)
// and vortex.learned_descriptor (LearnedDescriptor's cache side). Here
// H = 2 heads, m = 2 landmarks, r = 4 channels, blocks of 4 tokens of 8.

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
!u1 = !vortex.vtensor<?x8x1xbf16, #vortex.format<batched>>
!u  = !vortex.vtensor<?x2x4xbf16, #vortex.format<batched>>
!sp = !vortex.vtensor<?x4x2xbf16, #vortex.format<ragged>>
!s1 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// CHECK-LABEL: vortex.flow @learned
// CHECK:       vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64} : <?x4x8xbf16, #vortex.format<paged>>, <1x4x4xbf16, #vortex.format<parameter>>, <1x8x8xbf16, #vortex.format<parameter>> into <?x4x4xbf16, #vortex.format<paged>>
// CHECK:       vortex.gemm %q, %qproj {groups = 2 : i64} : (!vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>, !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x8x1xbf16, #vortex.format<batched>>
// The descriptor stays out of the cache side's fused kernel (a standalone
// op); the grouped GeMM out of the indexer's.
// FUSE:        cache(
// FUSE-NEXT:     vortex.learned_descriptor
// FUSE-NEXT:   {{^  }}}
// FUSE-NEXT:   indexer(
// FUSE-NEXT:     vortex.gemm %q, %qproj {groups = 2 : i64}
// FUSE-NEXT:     vortex.kernel
vortex.flow @learned config = #cfg fields(g = [4, 4]) params(mix = [4, 4], proj = [8, 8], qproj = [8, 8])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj, %qproj: !pj) {
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64}
      : !kv, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj, %qproj: !pj) {
  %u1 = vortex.gemm %q, %qproj {groups = 2 : i64} : (!q, !pj) -> !u1
  %u = vortex.reshape %u1 : !u1 -> !u
  %sp = vortex.gemm %u, %g : (!u, !g) -> !sp
  %s1 = vortex.max %sp {dim = 2 : i64} : !sp -> !s1
  %s = vortex.max %s1 {dim = 1 : i64} : !s1 -> !s
  vortex.topk %s into %o : !s into !o
}
