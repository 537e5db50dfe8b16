// RUN: vortex-opt %s --convert-vortex-to-linalg | FileCheck %s

// With reserved_eos = 0 a top-k selection may drop the row's partial last
// block: the manifest's attend step says why decode (the indexer, then
// attend over its selection) is refused; the attend step itself is there.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @no_eos
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 0, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK: steps = {attend = #vortex.step<args = ["q", "k", "v", "kv_indptr", "kv_indices", "kv_last_len", "o", "lse", "sm_scale"]
// CHECK-SAME: kernel = "_mlir_ciface_no_eos_attend"
// CHECK-SAME: decode_refusal = "reserved_eos: decode needs reserved_eos >= 1 (the flow has 0): a selection could drop the row's partial last block, which kv_last_len describes as the CSR's last entry"
// CHECK-LABEL: func.func @no_eos_attend(
