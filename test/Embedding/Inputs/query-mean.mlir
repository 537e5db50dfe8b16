// Input of install-package.test: the mean of a query over its heads.
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
func.func @query_mean(%q: !q) -> !qm {
  %m = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  return %m : !qm
}
