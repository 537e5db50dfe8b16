// REQUIRES: cuda-toolkit
// cache-dir: only the kernel and its workgroup buffers take the cache's
// name. A declaration whose name holds the kernel's (here libdevice's
// __nv_sinf, called by the kernel @sinf) keeps its own, so libdevice still
// defines it: the call is linked and inlined as without the cache, and the
// output is the same.
// RUN: rm -rf %t && mkdir -p %t
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels="toolkit=%cuda_path" \
// RUN:   | sed 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t/plain.mlir
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels="toolkit=%cuda_path cache-dir=%t/cache" \
// RUN:   | sed 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t/cached.mlir
// RUN: cmp %t/plain.mlir %t/cached.mlir
// RUN: FileCheck %s < %t/cached.mlir
// RUN: ls %t/cache | sed 's/^[0-9a-f]\{64\}\./KEY./' | sort | uniq -c | FileCheck %s --check-prefix=ENTRIES

// CHECK-LABEL: gpu.binary @calls
// CHECK-SAME:    .visible .entry sinf(
// CHECK-NOT:     __nv_sinf
// CHECK-NOT:     vortex_cached_kernel
// CHECK-SAME:    .visible .entry other(

// ENTRIES: {{^ *2 KEY.ptx$}}

gpu.module @calls [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @__nv_sinf(f32) -> f32
  llvm.func @sinf(%p: !llvm.ptr<1>, %x: f32) attributes {gpu.kernel, nvvm.kernel} {
    %y = llvm.call @__nv_sinf(%x) : (f32) -> f32
    llvm.store %y, %p : f32, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @other(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %c = llvm.mlir.constant(1 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}
