// RUN: vortex-opt %s | vortex-opt | FileCheck %s
// RUN: vortex-opt %s --mlir-print-op-generic | vortex-opt | FileCheck %s

// An MLA flow (vortex_torch vFlowMLA, docs/design.md "MLA flows"): the
// config carries kv_lora_rank and rope_dim, head_dim is the latent's width
// (512 + 64), k is the latent pool and q the absorbed query of all 16 query
// heads. v is the same pool and unused by the flow. A config without them
// prints neither (test/Dialect/flow.mlir).

!kv = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x16x576xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x576xbf16, #vortex.format<batched>>
!c  = !vortex.vtensor<?x1x576xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x576xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @rope_aware_block_sparse_mla
// CHECK-SAME: head_dim = 576, group_size = 16
// CHECK-SAME: kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64> fields(centroids = [1, 576])
// CHECK-NEXT: cache(%k: !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>, %v: !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>, %centroids:
// CHECK: indexer(%q: !vortex.vtensor<?x16x576xbf16, #vortex.format<batched>>
vortex.flow @rope_aware_block_sparse_mla
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
                            group_size = 16, topk_val = 29, topk_ratio = 0.0,
                            reserved_bos = 1, reserved_eos = 2,
                            intermediate_dtype = bf16, kv_dtype = bf16,
                            kv_lora_rank = 512, rope_dim = 64>
    fields(centroids = [1, 576])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}
