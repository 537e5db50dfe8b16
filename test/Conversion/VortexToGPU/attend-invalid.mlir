// RUN: vortex-opt %s --split-input-file --verify-diagnostics --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="attend=on"
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s --check-prefix=AUTO
// RUN: not vortex-opt %s --split-input-file --convert-vortex-to-gpu="attend=maybe" 2>&1 | FileCheck %s --check-prefix=OPTION

// attend=on refuses a flow whose shape the attend kernels cannot do, at the
// flow; under auto (the default) the same flow compiles without the step.
// AUTO-NOT: _attend_split
// AUTO-NOT: "attend"
// OPTION: convert-vortex-to-gpu: attend = maybe must be auto, on or off

!kv = !vortex.vtensor<?x16x100xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x100xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x100xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x100xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x100xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// expected-error @+1 {{the GPU attend kernel does not support head_dim 100 (it takes a multiple of 8 in [64, 768])}}
vortex.flow @d100
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 100,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 100])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// -----

!kv = !vortex.vtensor<?x16x1024xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x4x1024xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x1024xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x1024xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x1024xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// expected-error @+1 {{the GPU attend kernel does not support head_dim 1024 (it takes a multiple of 8 in [64, 768])}}
vortex.flow @d1024
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 1024,
        group_size = 4, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 1024])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}
