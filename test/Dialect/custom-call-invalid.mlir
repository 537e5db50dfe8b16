// RUN: vortex-opt %s -split-input-file -verify-diagnostics
//
// The rules of vortex.custom_call (CustomCallOp::verify): indexer side
// only, ragged or batched operands and result, a batched result only of
// batched operands, a callee that is a name.

!p = !vortex.vtensor<?x1x1xf32, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xf32, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  %m = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.custom_call' op 'Norm' is on the cache side; custom ops run in the indexer only}}
  %n = vortex.custom_call "Norm"(%m) : (!r) -> !r
  vortex.write %n into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.exp %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xf32, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xf32, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  // expected-error @+1 {{'vortex.custom_call' op input #0 of 'Norm' must be a ragged or batched value, got paged (read a field with vortex.load first)}}
  %s = vortex.custom_call "Norm"(%k) : (!p) -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!r = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!p = !vortex.vtensor<?x1x1xf32, #vortex.format<paged>>

func.func @f(%x: !r) {
  // expected-error @+1 {{'vortex.custom_call' op the result of 'Norm' must be declared ragged or batched, got paged}}
  %y = vortex.custom_call "Norm"(%x) : (!r) -> !p
  return
}

// -----

!r = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xf32, #vortex.format<batched>>

func.func @f(%x: !r, %y: !b) {
  // expected-error @+1 {{'vortex.custom_call' op the result of 'Mix' is declared batched but an input is ragged}}
  %z = vortex.custom_call "Mix"(%x, %y) : (!r, !b) -> !b
  return
}

// -----

!r = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>

func.func @f(%x: !r) {
  // expected-error @+1 {{'vortex.custom_call' op callee must be a non-empty name of letters, digits, '_' and '.', got 'a b'}}
  %y = vortex.custom_call "a b"(%x) : (!r) -> !r
  return
}

// -----

!r = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>

func.func @f() {
  // expected-error @+1 {{'vortex.custom_call' op 'Zero' needs at least one input}}
  %y = vortex.custom_call "Zero"() : () -> !r
  return
}

// -----

!r = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>

func.func @f(%x: !r) {
  // expected-error @+1 {{operand #0 must be variadic of vtensor of floating-point values}}
  %y = vortex.custom_call "Ints"(%x) : (!r) -> !r
  return
}
