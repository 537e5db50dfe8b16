// RUN: vortex-opt %s --split-input-file --vortex-gpu-serialize-kernels | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-gpu-serialize-kernels --mlir-disable-threading | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-gpu-serialize-kernels=format=llvm | FileCheck %s --check-prefix=LLVM

// Two kernels, each serialized from its own piece and joined: one header,
// both entries in the module's order, each kernel's shared buffer inside it.
// CHECK-LABEL: gpu.binary @two
// CHECK-SAME:    assembly = "
// CHECK-SAME:    .version 8.0
// CHECK-SAME:    .target sm_90
// CHECK-NOT:     .version
// CHECK-SAME:    .visible .entry first(
// CHECK-SAME:    st.global.b32
// CHECK-SAME:    .visible .entry second(
// CHECK-SAME:    .shared .align 4 .b8 __wg_second[16]
// CHECK-SAME:    atom.shared.add.u32
// CHECK-NOT:     .visible .entry
// CHECK-SAME:    ">]
// LLVM-LABEL:  gpu.binary @two
// LLVM-SAME:     offload = "
gpu.module @two [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @first(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %c = llvm.mlir.constant(7 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
  llvm.mlir.global internal @__wg_second() {addr_space = 3 : i32} : !llvm.array<4 x i32>
  llvm.func @second(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %s = llvm.mlir.addressof @__wg_second : !llvm.ptr<3>
    %c = llvm.mlir.constant(1 : i32) : i32
    %v = llvm.atomicrmw add %s, %c monotonic : !llvm.ptr<3>, i32
    llvm.store %v, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}

// -----

// A helper both kernels call stays a .func when it is not inlined: two
// pieces would both define it, so the module is serialized whole (one
// definition).
// CHECK-LABEL: gpu.binary @shared_helper
// CHECK-SAME:    .func helper(
// CHECK-NOT:     .func helper(
// CHECK-SAME:    .visible .entry a(
// CHECK-SAME:    .visible .entry b(
// CHECK-NOT:     .func helper(
// CHECK-SAME:    ">]
gpu.module @shared_helper [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func internal @helper(%p: !llvm.ptr<1>) attributes {no_inline} {
    %c = llvm.mlir.constant(1 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @a(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    llvm.call @helper(%p) : (!llvm.ptr<1>) -> ()
    llvm.return
  }
  llvm.func @b(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    llvm.call @helper(%p) : (!llvm.ptr<1>) -> ()
    llvm.return
  }
}

// -----

// One kernel: nothing to split.
// CHECK-LABEL: gpu.binary @one
// CHECK-SAME:    .visible .entry only(
gpu.module @one [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @only() attributes {gpu.kernel, nvvm.kernel} {
    llvm.return
  }
}
