// Bad vortex-to-nvvm options are rejected with a message before anything
// runs (a PTX ISA too old for the chip would abort inside LLVM), and a
// kernel the gap-closing passes cannot lower gets a located error.
//
// RUN: not vortex-opt %s --vortex-to-nvvm='chip=sm_100 features=+ptx80' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=OLDPTX
// RUN: not vortex-opt %s --vortex-to-nvvm='chip=sm_50' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CHIP
// RUN: not vortex-opt %s --vortex-to-nvvm='features=+ptx99' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FEATURE
// RUN: not vortex-opt %s --vortex-to-nvvm='opt-level=4' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=OPT
// RUN: not vortex-opt %s --vortex-to-nvvm='to-gpu=topk-threads=100' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOPKT
// RUN: not vortex-opt %s --vortex-to-nvvm='to-gpu=topk-saves-min-rows=-2' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SAVES
// RUN: not vortex-opt %s --vortex-to-nvvm='to-gpu=bogus=1' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOGPU
// RUN: not vortex-opt %s --vortex-to-nvvm='format=offload' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FORMAT
// RUN: not vortex-opt %s --vortex-to-nvvm 2>&1 \
// RUN:   | FileCheck %s --check-prefix=KERNEL

// OLDPTX: error: chip sm_100 needs PTX ISA 8.6 or newer (+ptx86), but features select 8.0
// CHIP: error: unsupported chip 'sm_50'; expected one of sm_75 sm_80 {{.*}} sm_90 sm_90a sm_100
// FEATURE: error: unknown PTX ISA feature '+ptx99'
// OPT: error: opt-level must be 0, 1, 2 or 3, got 4
// FORMAT: error: unknown format 'offload'; expected isa, bin, fatbin or llvm
// The generator's options (to-gpu) are its pass's: their bounds are checked
// by the pass before it builds anything, a malformed string before the
// pipeline runs.
// TOPKT: error: convert-vortex-to-gpu: topk-threads = 100 must be 0 (planned), 128, 256 or 512
// SAVES: error: convert-vortex-to-gpu: topk-saves-min-rows = -2 must be -1 (never) or a row count in [0, 2^30]
// TOGPU: error: to-gpu: <Pass-Options-Parser>: no such option bogus

gpu.module @bad_kernels {
  gpu.func @wide_cluster(%x: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<?xf32>
    // KERNEL: vortex-to-nvvm-invalid.mlir:[[@LINE+1]]:10: error: 'gpu.subgroup_reduce' op cluster size 64 exceeds the subgroup size 32
    %r = gpu.subgroup_reduce add %v cluster(size = 64) : (f32) -> f32
    memref.store %r, %x[%c0] : memref<?xf32>
    gpu.return
  }
}
