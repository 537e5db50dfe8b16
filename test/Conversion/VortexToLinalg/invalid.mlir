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
