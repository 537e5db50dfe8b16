// vortex-to-nvvm on a hand-written gpu.module (Inputs/demo-kernels.mlir):
// the gpu.binary it produces, the PTX inside it, and the NVVM-dialect stage.
// The PTX is the escaped string `assembly = "..."`: sed unescapes it.
//
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir --vortex-to-nvvm \
// RUN:   | FileCheck %s --check-prefix=BIN
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir --vortex-to-nvvm \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir --vortex-nvvm-stage-lower \
// RUN:   --vortex-nvvm-stage-binary \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX
// The pipeline's kernel-cache reaches the serializing pass: the same PTX
// (the whole-module path also records its time), and one cache entry for
// the one kernel.
// RUN: rm -rf %t && mkdir -p %t
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir --vortex-to-nvvm \
// RUN:   | sed 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t/plain.mlir
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm="kernel-cache=%t/cache" > %t/cached.mlir
// RUN: cmp %t/plain.mlir %t/cached.mlir
// RUN: ls %t/cache | wc -l | FileCheck %s --check-prefix=ENTRIES
// prebuilt-kernels reaches it too: the entry read from there (tampered
// with, to show it) and copied into a new cache.
// RUN: cp -r %t/cache %t/prebuilt
// RUN: for f in %t/prebuilt/*; do echo '// prebuilt' >> $f; done
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm="kernel-cache=%t/cache2 prebuilt-kernels=%t/prebuilt" \
// RUN:   | sed -e 's/\\0A/\n/g' | FileCheck %s --check-prefix=PREBUILT
// RUN: ls %t/cache2 | wc -l | FileCheck %s --check-prefix=ENTRIES
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir --vortex-nvvm-stage-lower \
// RUN:   | FileCheck %s --check-prefix=NVVM --implicit-check-not=arith. \
// RUN:     --implicit-check-not='{{[ "]vector\.}}' --implicit-check-not=scf. \
// RUN:     --implicit-check-not=memref. --implicit-check-not=math. \
// RUN:     --implicit-check-not=gpu.subgroup --implicit-check-not=gpu.shuffle \
// RUN:     --implicit-check-not=gpu.barrier \
// RUN:     --implicit-check-not=unrealized_conversion_cast
// Explicit options, as the defaults are.
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm='chip=sm_90 features=+ptx80 opt-level=3 format=isa' \
// RUN:   | FileCheck %s --check-prefix=BIN
// opt-level and format reach the target and the object.
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm='opt-level=1 format=llvm' \
// RUN:   | FileCheck %s --check-prefix=LLVM

// BIN-NOT: gpu.module
// BIN: gpu.binary @demo_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, assembly = "
// BIN-NOT: gpu.module

// PTX: .version 8.0
// PTX: .target sm_90
// PTX: .address_size 64
// PTX: .visible .entry demo_row(
// Two memref descriptors (allocated, aligned, offset, size, stride) and n.
// PTX-COUNT-10: .param .u64
// PTX-NEXT: .param .u32 demo_row_param_10
// PTX: .maxntid 256, 1, 1
// The workgroup buffer.
// PTX: .shared .align 4 .b8 __wg_demo_row_0[1024];
// One 16-byte load of 8 bf16, widened to f32.
// PTX: ld.global.v4.b32
// PTX: cvt.f32.bf16
// gpu.subgroup_reduce cluster(size = 16): four butterflies, none over 16.
// PTX: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// PTX: shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// PTX: shfl.sync.bfly.b32 {{.*}}, 4, 31, -1;
// PTX: shfl.sync.bfly.b32 {{.*}}, 8, 31, -1;
// PTX-NOT: shfl.sync.bfly.b32 {{.*}}, 16, 31
// gpu.shuffle xor 1 after math.exp.
// PTX: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// PTX: st.shared.b32
// PTX: bar.sync 0;
// The masked transfer_read/write: per-lane predicated accesses.
// PTX: @%p{{[0-9]+}} bra
// PTX: ld.global.b32
// PTX: ld.shared.b32
// PTX: st.global.b32
// PTX: ret;

// NVVM: gpu.module @demo_kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">]
// NVVM: llvm.mlir.global internal @__wg_demo_row_0() {addr_space = 3 : i32
// NVVM: llvm.func @__nv_expf(f32) -> f32
// NVVM: llvm.func @demo_row(
// NVVM-SAME: attributes {gpu.kernel, {{.*}}nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// NVVM-COUNT-4: nvvm.shfl.sync bfly
// NVVM: llvm.call @__nv_expf
// NVVM: nvvm.shfl.sync bfly
// NVVM: nvvm.barrier0
// NVVM: llvm.intr.masked.load
// NVVM: llvm.intr.masked.store

// LLVM: gpu.binary @demo_kernels  [#gpu.object<#nvvm.target<O = 1, chip = "sm_90", features = "+ptx80">, offload = "BC

// A vortex flow goes through convert-vortex-to-gpu first (it is registered
// in vortex-opt); every shipped flow compiles.
// RUN: vortex-opt %examples/block_sparse_attention.mlir --vortex-to-nvvm \
// RUN:   | FileCheck %s --check-prefix=FLOW
// RUN: for f in %examples/*.mlir; do vortex-opt $f --vortex-to-nvvm -o /dev/null || exit 1; done

// FLOW: module attributes {{.*}}vortex.manifest = #vortex.manifest<version = 2, flow = "block_sparse_attention", backend = "cuda"
// FLOW-NOT: vortex.flow
// FLOW: gpu.binary @block_sparse_attention_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, assembly = "

// ENTRIES: {{^ *1$}}
// PREBUILT: // prebuilt
