// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="attend=on" -verify-diagnostics
//
// attend=on over a packed int4 pool (kv_dtype = i4) whose shape the attend
// kernels do not take (head_dim 32, below 64) is refused at the flow, as
// for float pools (docs/gpu.md, "INT4 KV"); int4.mlir has a supported one.

!kv = !vortex.vtensor<?x16x32xf32, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x32xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x32xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x32xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x32xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// expected-error @+1 {{the GPU attend kernel does not support head_dim 32 (it takes a multiple of 8 in [64, 256] for a packed int4 pool)}}
vortex.flow @centroids_int4
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 32,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = i4>
    fields(centroids = [1, 32])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}
