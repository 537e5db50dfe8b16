// RUN: vortex-opt %s --split-input-file --verify-diagnostics --vortex-pad

// Outside a flow, vtensor types are part of a function signature: the pass
// does not rewrite them.
!q = !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
func.func @stray(%q: !q) -> !qm {
  // expected-error @+1 {{'vortex.mean' op outside a vortex.flow cannot be padded}}
  %m = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  return %m : !qm
}

// -----

// A parameter outside a flow is part of a function signature too.
!w = !vortex.vtensor<1x3x96xbf16, #vortex.format<parameter>>
!c = !vortex.vtensor<?x1x96xbf16, #vortex.format<paged>>
!s = !vortex.vtensor<?x1x3xbf16, #vortex.format<ragged>>
func.func @stray_parameter(%w: !w, %c: !c) -> !s {
  // expected-error @+1 {{'vortex.gemm' op outside a vortex.flow cannot be padded}}
  %g = vortex.gemm %w, %c : (!w, !c) -> !s
  return %g : !s
}
