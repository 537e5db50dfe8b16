// RUN: vortex-opt %s --split-input-file --vortex-gpu-serialize-kernels -verify-diagnostics
// RUN: not vortex-opt %s --vortex-gpu-serialize-kernels=format=cubin 2>&1 | FileCheck %s --check-prefix=FORMAT
// A kernel cache that is a file, not a directory.
// RUN: rm -rf %t && touch %t
// RUN: not vortex-opt %s --vortex-gpu-serialize-kernels=cache-dir=%t 2>&1 | FileCheck %s --check-prefix=CACHE
// Prebuilt kernels that are not a directory, with a cache or without one.
// RUN: not vortex-opt %s --vortex-gpu-serialize-kernels=prebuilt-dir=%t 2>&1 | FileCheck %s --check-prefix=PREBUILT
// RUN: not vortex-opt %s --vortex-gpu-serialize-kernels="cache-dir=%t.cache prebuilt-dir=%t" 2>&1 | FileCheck %s --check-prefix=PREBUILT
// RUN: not ls %t.cache

// A module without targets has nothing to serialize for.
// expected-error @+1 {{the module has no target attributes}}
gpu.module @untargeted {
  llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
    llvm.return
  }
}

// -----

// A kernel LLVM IR cannot be translated from (an op left unlowered): the
// piece's error names the kernel.
// expected-error @+2 {{Failed creating the llvm::Module.}}
// expected-error @+1 {{an error happened while serializing kernel @bad}}
gpu.module @broken [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @good() attributes {gpu.kernel, nvvm.kernel} {
    llvm.return
  }
  llvm.func @bad(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    // expected-error @+1 {{cannot be converted to LLVM IR}}
    %c = arith.constant 1 : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}

// FORMAT: error: unknown format 'cubin'; expected isa, bin, fatbin or llvm
// CACHE: error: the kernel cache '{{.*}}' is not a directory
// PREBUILT: error: prebuilt-dir '{{.*}}' is not a directory
