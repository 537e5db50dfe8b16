// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="lanes=1" | FileCheck %s

// A contraction of two loaded replicated tiles (one lane per block: a
// narrow kernel, as LearnedDescriptor's cache body is) with more than 16384
// multiply-adds is emitted as loops, not unrolled: over the result's rows
// and columns, and over K in steps of 8 (8 multiply-adds unrolled), both
// operands read from their buffers, the result kept in a per-thread buffer
// allocated at the kernel's entry. Here [16, 128] x [128, 128]: 262144.

!kv = !vortex.vtensor<?x16x128xf32, #vortex.format<paged>>
!w = !vortex.vtensor<1x128x128xf32, #vortex.format<parameter>>
!t = !vortex.vtensor<?x16x128xf32, #vortex.format<ragged>>
!cr = !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>
!c = !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>
!q = !vortex.vtensor<?x8x128xf32, #vortex.format<batched>>
!s8 = !vortex.vtensor<?x8x1xf32, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @rolled
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = f32,
        kv_dtype = f32>
    fields(c = [1, 128]) params(w = [128, 128])
cache(%k: !kv, %v: !kv, %c: !c, %w: !w) {
  %t = vortex.gemm %w, %k : (!w, !kv) -> !t
  %m = vortex.mean %t {dim = 1 : i64} : !t -> !cr
  vortex.write %m into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !c, %w: !w) {
  %s8 = vortex.gemm %c, %q : (!c, !q) -> !s8
  %s = vortex.max %s8 {dim = 1 : i64} : !s8 -> !s
  vortex.topk %s into %o : !s into !o
}

// The indexer's contraction ([8, 128] x [1, 128]) is short: no buffer.
// CHECK-LABEL: gpu.func @rolled_indexer_w0
// CHECK-NOT:     memref.alloca
// CHECK-LABEL: gpu.func @rolled_cache_w0
// CHECK-NEXT:    %[[BUF:.+]] = memref.alloca() : memref<2048xf32>
// CHECK:         %[[C16:.+]] = arith.constant 16 : index
// CHECK:         scf.for %{{.+}} = %{{.+}} to %[[C16]] step
// CHECK:           %[[C128:.+]] = arith.constant 128 : index
// CHECK:           scf.for %{{.+}} = %{{.+}} to %[[C128]] step
// CHECK:             %[[C8:.+]] = arith.constant 8 : index
// CHECK:             %[[SUM:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C8]] iter_args(
// CHECK-COUNT-8:       arith.mulf
// CHECK-NOT:           arith.mulf
// CHECK:               scf.yield
// CHECK:             memref.store %[[SUM]], %[[BUF]]
// CHECK:         memref.load %[[BUF]]
// CHECK:         gpu.return

// -----

// At 16384 multiply-adds ([16, 128] x [8, 128]) the contraction stays
// unrolled, as every contraction of the shipped flows: no loop, no buffer.

!kv = !vortex.vtensor<?x16x128xf32, #vortex.format<paged>>
!w = !vortex.vtensor<1x8x128xf32, #vortex.format<parameter>>
!t = !vortex.vtensor<?x16x8xf32, #vortex.format<ragged>>
!cr = !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>
!c = !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>
!q = !vortex.vtensor<?x8x128xf32, #vortex.format<batched>>
!s8 = !vortex.vtensor<?x8x1xf32, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @unrolled
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = f32,
        kv_dtype = f32>
    fields(c = [1, 128]) params(w = [8, 128])
cache(%k: !kv, %v: !kv, %c: !c, %w: !w) {
  %t = vortex.gemm %w, %k : (!w, !kv) -> !t
  %m = vortex.reshape %t : !t -> !cr
  vortex.write %m into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !c, %w: !w) {
  %s8 = vortex.gemm %c, %q : (!c, !q) -> !s8
  %s = vortex.max %s8 {dim = 1 : i64} : !s8 -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-LABEL: gpu.func @unrolled_cache_w0
// CHECK-NOT:     memref.alloca
// CHECK-NOT:     iter_args
// CHECK:         gpu.return
