// RUN: vortex-opt %s --split-input-file --verify-diagnostics --vortex-mask-padding

// The masking pass needs explicit padding: run vortex-pad first.
!q = !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
func.func @implicit(%q: !q) -> !qm {
  // expected-error @+1 {{'vortex.mean' op uses '!vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>' whose padding is implicit; run --vortex-pad first}}
  %m = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  return %m : !qm
}

// -----

// A parameter operand too: it is masked only once vortex-pad has made its
// padding explicit.
!w = !vortex.vtensor<1x3x96xbf16, #vortex.format<parameter>>
!r = !vortex.vtensor<?x3x1xbf16, #vortex.format<ragged>>
func.func @implicit_parameter(%w: !w) -> !r {
  // expected-error @+1 {{'vortex.max' op uses '!vortex.vtensor<1x3x96xbf16, #vortex.format<parameter>>' whose padding is implicit; run --vortex-pad first}}
  %m = vortex.max %w {dim = 2 : i64} : !w -> !r
  return %m : !r
}
