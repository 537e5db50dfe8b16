// RUN: vortex-opt %s -split-input-file -verify-diagnostics --vortex-split-custom-calls
//
// What vortex-split-custom-calls refuses, at the op: a value crossing a
// cut whose inner sizes are not powers of two, and a load of a field
// saved in an earlier stage (a load sees the start of the step).

!k = !vortex.vtensor<?x4x8xf32, #vortex.format<paged>>
!q = !vortex.vtensor<?x3x8xf32, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 3, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

vortex.flow @f config = #cfg fields()
cache(%k: !k, %v: !k) {
}
indexer(%q: !q, %o: !o, %k: !k, %v: !k) {
  %x = vortex.exp %q : !q -> !q
  // expected-error @+1 {{'vortex.custom_call' op cannot be split around a custom op: the value '!vortex.vtensor<?x3x8xf32, #vortex.format<batched>>' crosses a stage cut}}
  %n = vortex.custom_call "Pick"(%x) : (!q) -> !q
  %s = vortex.gemm %n, %k : (!q, !k) -> !vortex.vtensor<?x4x3xf32, #vortex.format<ragged>>
  %m = vortex.max %s {dim = 1 : i64} : !vortex.vtensor<?x4x3xf32, #vortex.format<ragged>> -> !vortex.vtensor<?x1x3xf32, #vortex.format<ragged>>
  %t = vortex.max %m {dim = 2 : i64} : !vortex.vtensor<?x1x3xf32, #vortex.format<ragged>> -> !s
  vortex.topk %t into %o : !s into !o
}

// -----

!k = !vortex.vtensor<?x4x8xf32, #vortex.format<paged>>
!p = !vortex.vtensor<?x1x1xf32, #vortex.format<paged>>
!q = !vortex.vtensor<?x2x8xf32, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x8xf32, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

vortex.flow @f config = #cfg fields(acc = [1, 1])
cache(%k: !k, %v: !k, %acc: !p) {
}
indexer(%q: !q, %o: !o, %k: !k, %v: !k, %acc: !p) {
  %m = vortex.mean %k {dim = 1 : i64} : !k -> !vortex.vtensor<?x1x8xf32, #vortex.format<ragged>>
  %x = vortex.mean %m {dim = 2 : i64} : !vortex.vtensor<?x1x8xf32, #vortex.format<ragged>> -> !s
  vortex.save %x into %acc : !s into !p
  %n = vortex.custom_call "Norm"(%x) : (!s) -> !s
  // expected-error @+1 {{'vortex.load' op reads a field saved before a custom op that precedes it}}
  %l = vortex.load %acc : !p -> !s
  %y = vortex.add %n, %l : (!s, !s) -> !s
  vortex.topk %y into %o : !s into !o
}
