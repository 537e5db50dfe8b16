// A hand-written gpu.module whose kernels call a func.func helper: the
// prepare passes run on every function of the module (nestAny), not only
// on gpu.func kernels, so the helper's scf.for is lowered too; and the
// helper stays a .func in the PTX, which two per-kernel pieces would both
// define, so vortex-gpu-serialize-kernels serializes the module whole (one
// definition, both kernels).
//
// RUN: vortex-opt %s --vortex-nvvm-stage-lower \
// RUN:   | FileCheck %s --check-prefix=NVVM --implicit-check-not=scf.
// RUN: vortex-opt %s --vortex-to-nvvm \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// NVVM: llvm.func @helper(
// NVVM: llvm.func @first(
// NVVM: llvm.func @second(

// PTX: .visible .func helper(
// PTX-NOT: .func helper(
// PTX: .visible .entry first(
// PTX: .visible .entry second(
// PTX-NOT: .func helper(

module attributes {gpu.container_module} {
  gpu.module @k {
    func.func @helper(%n: index, %p: memref<?xf32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %f = arith.constant 1.0 : f32
      scf.for %i = %c0 to %n step %c1 {
        memref.store %f, %p[%i] : memref<?xf32>
      }
      return
    }
    gpu.func @first(%n: index, %p: memref<?xf32>) kernel {
      func.call @helper(%n, %p) : (index, memref<?xf32>) -> ()
      gpu.return
    }
    gpu.func @second(%n: index, %p: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        func.call @helper(%n, %p) : (index, memref<?xf32>) -> ()
      }
      gpu.return
    }
  }
}
