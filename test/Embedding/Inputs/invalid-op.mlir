// Input of plugin.mlir: a vortex.mean over a non-existent axis.
func.func @bad_dim(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>) {
  %m = vortex.mean %q {dim = 3 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>> -> !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
  return
}
