// RUN: vortex-opt %s --split-input-file --verify-diagnostics

!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// A kernel belongs to a flow body.
func.func @outside(%x: !s) -> !s {
  // expected-error @+1 {{'vortex.kernel' op must be nested in a vortex.flow body}}
  %r = vortex.kernel -> !s {
    %e = vortex.exp %x : !s -> !s
    vortex.yield %e : !s
  }
  return %r : !s
}

// -----

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @s_in_kernel
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %p = vortex.kernel -> !s {
    // expected-error @+1 {{'vortex.softmax' op is not workload-fused (schedule W) and cannot be part of a vortex.kernel}}
    %x = vortex.softmax %s : !s -> !s
    vortex.yield %x : !s
  }
  vortex.topk %p into %o : !s into !o
}

// -----

!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!t = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
func.func @mask_type(%x: !s) -> !t {
  // expected-error @+1 {{'vortex.mask_lanes' op result type must equal the input type}}
  %m = vortex.mask_lanes %x {value = 0.0 : f32} : !s -> !t
  return %m : !t
}
