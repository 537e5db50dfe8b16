// RUN: vortex-opt %s --convert-vortex-to-linalg -split-input-file -verify-diagnostics

// Only vortex.attend may stand outside a flow: a catalog op beside it is
// still refused, and the pass changes nothing (the attend is kept).
func.func @stray_beside_attend(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %s: f32,
                               %b: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>) {
  %o, %lse = vortex.attend %q, %k, %k, %ip, %ip, %ip, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  // expected-error @+1 {{'vortex.mean' op outside a vortex.flow cannot be lowered}}
  %m = vortex.mean %b {dim = 1 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>> -> !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
  return
}
