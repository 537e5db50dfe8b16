// RUN: vortex-opt %s --convert-vortex-to-linalg -split-input-file -verify-diagnostics

// Vortex values are addressed through a flow's block lists: an op outside a
// flow cannot be lowered.
func.func @stray(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>) {
  // expected-error @+1 {{'vortex.mean' op outside a vortex.flow cannot be lowered}}
  %m = vortex.mean %q {dim = 1 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>> -> !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
  return
}

// -----

// So is a parameter: it is a step argument of a flow.
func.func @stray_parameter(%w: !vortex.vtensor<1x2x128xbf16, #vortex.format<parameter>>,
                           %c: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.gemm' op outside a vortex.flow cannot be lowered}}
  %g = vortex.gemm %w, %c : (!vortex.vtensor<1x2x128xbf16, #vortex.format<parameter>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x2xbf16, #vortex.format<ragged>>
  return
}

// -----

// A grouped GeMM reads a parameter weight, but its batched x and result
// still belong to a flow's rows.
func.func @stray_grouped(%q: !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>,
                         %w: !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.gemm' op outside a vortex.flow cannot be lowered}}
  %u = vortex.gemm %q, %w {groups = 2 : i64} : (!vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>, !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x8x1xbf16, #vortex.format<batched>>
  return
}

// -----

// A learned descriptor reads the completed blocks of a cache step: outside
// a flow there are none.
func.func @stray_learned_descriptor(
    %k: !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>,
    %g: !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>,
    %mix: !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>,
    %proj: !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.learned_descriptor' op outside a vortex.flow cannot be lowered}}
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64}
      : !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>,
        !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>,
        !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
        into !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
  return
}

// -----

// A writer's field must be a field of the step (WriterToLinalg): the flow
// verifier accepts a masked copy of one as the field operand, which the
// step cannot write back.
!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
!s4 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @not_a_field
    config = #vortex.config<block_size = 4, page_size = 4, head_dim = 8,
        group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0,
        reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
    fields(g = [4, 4]) params(mix = [4, 4], proj = [8, 8])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  vortex.fill %g : !g
  %masked = vortex.mask_lanes %g {value = 0.0 : f32} : !g -> !g
  // expected-error @+1 {{failed to legalize operation 'vortex.learned_descriptor'}}
  vortex.learned_descriptor %k, %mix, %proj into %masked {heads = 2 : i64}
      : !kv, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  %a = vortex.max %g {dim = 2 : i64} : !g -> !s4
  %s = vortex.max %a {dim = 1 : i64} : !s4 -> !s
  vortex.topk %s into %o : !s into !o
}
