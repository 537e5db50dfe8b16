// Kernels without a vortex.manifest attribute (and without libdevice calls).
gpu.module @bare_kernels {
  gpu.func @scale(%x: memref<?xf32>, %s: f32) kernel {
    %i = gpu.thread_id x
    %v = memref.load %x[%i] : memref<?xf32>
    %r = arith.mulf %v, %s : f32
    memref.store %r, %x[%i] : memref<?xf32>
    gpu.return
  }
  gpu.func @helper_kernel(%x: memref<?xf32>) kernel {
    %i = gpu.thread_id x
    %v = memref.load %x[%i] : memref<?xf32>
    %r = gpu.subgroup_reduce maxnumf %v : (f32) -> f32
    memref.store %r, %x[%i] : memref<?xf32>
    gpu.return
  }
  // Not a kernel: not listed.
  gpu.func @device_fn(%x: f32) -> f32 {
    gpu.return %x : f32
  }
}
