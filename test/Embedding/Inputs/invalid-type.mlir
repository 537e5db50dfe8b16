// Input of plugin.mlir: a vtensor of i64, which no vortex kernel supports.
func.func @bad_type(%q: !vortex.vtensor<?x8x128xi64, #vortex.format<batched>>) {
  return
}
