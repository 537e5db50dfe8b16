// cache-dir: each kernel's PTX is kept under a hash of its piece and read
// back when the same piece comes again (a module without kernels has none;
// serialized whole, it records its LLVM time, which the comparisons drop).
// The piece is hashed and compiled with the kernel under the cache's name,
// which the PTX then trades for the kernel's own, so a kernel found under
// another name, in another module or flow, reuses the entry (@renamed). The
// output is the same as without the cache. A recompile gives the same
// output; entries tampered with show up in it, so they were read, not
// recompiled; a module of one kernel takes the per-kernel path too; another
// chip is another entry.
// RUN: rm -rf %t && mkdir -p %t
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels | FileCheck %s
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels \
// RUN:   | sed 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t/plain.mlir
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels="cache-dir=%t/cache" \
// RUN:   | sed 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t/first.mlir
// RUN: cmp %t/plain.mlir %t/first.mlir
// RUN: FileCheck %s < %t/first.mlir
// RUN: ls %t/cache | sed 's/^[0-9a-f]\{64\}\./KEY./' | sort | uniq -c | FileCheck %s --check-prefix=FOUR
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels="cache-dir=%t/cache" \
// RUN:   | sed 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t/second.mlir
// RUN: cmp %t/first.mlir %t/second.mlir
// RUN: for f in %t/cache/*.ptx; do echo '// from the kernel cache' >> $f; done
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels="cache-dir=%t/cache" | FileCheck %s --check-prefix=HIT
// prebuilt-dir: entries read from another directory, never written there;
// a hit is copied into the cache (the same bytes: it then hits there too).
// RUN: ls -l --full-time %t/cache > %t/prebuilt.before && (cd %t/cache && md5sum *) > %t/prebuilt.sums
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels="cache-dir=%t/fresh prebuilt-dir=%t/cache" | FileCheck %s --check-prefix=HIT
// RUN: ls -l --full-time %t/cache | diff %t/prebuilt.before -
// RUN: cd %t/fresh && md5sum -c --quiet %t/prebuilt.sums
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels="cache-dir=%t/fresh" | FileCheck %s --check-prefix=HIT
// prebuilt-dir alone: read there, written nowhere (the directory untouched,
// no cache made).
// RUN: ls -R %t > %t.files
// RUN: cd %t && vortex-opt %s --vortex-gpu-serialize-kernels="prebuilt-dir=%t/cache" | FileCheck %s --check-prefix=HIT
// RUN: ls -l --full-time %t/cache | diff %t/prebuilt.before -
// RUN: ls -R %t | diff %t.files -
// Entries begin with their key: one read under another key (here, every
// entry moved to another's place) is compiled again and replaced.
// RUN: cp -r %t/cache %t/swapped
// RUN: set -- %t/swapped/*.ptx && cp $1 %t/one.ptx && cp $2 $1 && cp $3 $2 && cp $4 $3 && cp %t/one.ptx $4
// RUN: vortex-opt %s --vortex-gpu-serialize-kernels="cache-dir=%t/swapped" \
// RUN:   | sed 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t/third.mlir
// RUN: cmp %t/third.mlir %t/first.mlir
// RUN: not grep -q 'from the kernel cache' %t/swapped/*.ptx
// RUN: head -qn1 %t/swapped/*.ptx | FileCheck %s --check-prefix=HEADER
// RUN: sed 's/sm_90/sm_80/' %s | vortex-opt --vortex-gpu-serialize-kernels="cache-dir=%t/cache" | FileCheck %s --check-prefix=SM80
// RUN: ls %t/cache | sed 's/^[0-9a-f]\{64\}\./KEY./' | sort | uniq -c | FileCheck %s --check-prefix=EIGHT

// CHECK-LABEL: gpu.binary @two
// CHECK-SAME:    .target sm_90
// CHECK-SAME:    .visible .entry first(
// CHECK-SAME:    .visible .entry second(
// CHECK-NOT:     from the kernel cache
// CHECK-LABEL: gpu.binary @renamed
// CHECK-SAME:    // .globl\09third\0A
// CHECK-SAME:    .visible .entry third(
// CHECK-SAME:    .param .u64 .ptr .global .align 1 third_param_0
// CHECK-SAME:    st.global.b32 {{.*}}[%rd1], 7;
// CHECK-SAME:    .visible .entry fourth(
// CHECK-SAME:    st.global.b32 {{.*}}[%rd1], 9;
// CHECK-NOT:     vortex_cached_kernel
// CHECK-LABEL: gpu.binary @odd
// CHECK-SAME:    .visible .entry vortex_cached_kernel_xxx
// CHECK-LABEL: gpu.binary @one
// CHECK-SAME:    .visible .entry only(
// CHECK-LABEL: gpu.binary @none
// CHECK-SAME:    .func helper(

// HIT-LABEL: gpu.binary @two
// HIT-SAME:    .visible .entry first(
// HIT-SAME:    // from the kernel cache
// HIT-SAME:    .visible .entry second(
// HIT-SAME:    // from the kernel cache
// HIT-LABEL: gpu.binary @renamed
// HIT-SAME:    .visible .entry third(
// HIT-SAME:    // from the kernel cache
// HIT-SAME:    .visible .entry fourth(
// HIT-SAME:    // from the kernel cache
// HIT-LABEL: gpu.binary @one
// HIT-SAME:    .visible .entry only(
// HIT-SAME:    // from the kernel cache

// SM80-LABEL: gpu.binary @two
// SM80-SAME:    .target sm_80
// SM80-NOT:     from the kernel cache

// HEADER-COUNT-4: {{^vortex-kernel-cache-2 [0-9a-f]{64}\.ptx$}}

// Entries for first, second and only; @renamed takes first's and second's;
// @odd, whose kernel already has the cache's name, gets its own.
// FOUR: {{^ *4 KEY.ptx$}}
// EIGHT: {{^ *8 KEY.ptx$}}

gpu.module @two [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @first(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %c = llvm.mlir.constant(7 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @second(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %c = llvm.mlir.constant(9 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}

// first and second under other names.
gpu.module @renamed [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @third(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %c = llvm.mlir.constant(7 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @fourth(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %c = llvm.mlir.constant(9 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}

// A kernel with the cache's name keeps it, and its piece its own key.
gpu.module @odd [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @vortex_cached_kernel_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %c = llvm.mlir.constant(3 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}

gpu.module @one [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @only(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
    %c = llvm.mlir.constant(3 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}

// A module without kernels is serialized whole, as without the cache.
gpu.module @none [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  llvm.func @helper(%p: !llvm.ptr<1>) {
    %c = llvm.mlir.constant(5 : i32) : i32
    llvm.store %c, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}
