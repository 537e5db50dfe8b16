// vortex-to-nvvm for other chips: features default to the lowest PTX ISA
// the chip accepts, and at least 8.0 (sm_100 needs 8.6).
//
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir --vortex-to-nvvm='chip=sm_80' \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=SM80
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir --vortex-to-nvvm='chip=sm_100' \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=SM100
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir --vortex-to-nvvm='chip=sm_90a' \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=SM90A
// RUN: vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm='chip=sm_90 features=+ptx90' \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX90

// SM80: #nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">
// SM80: .version 8.0
// SM80: .target sm_80
// SM80: ld.global.v4.b32
// SM80: shfl.sync.bfly.b32
// SM80: bar.sync 0;

// SM100: #nvvm.target<O = 3, chip = "sm_100", features = "+ptx86">
// SM100: .version 8.6
// SM100: .target sm_100
// SM100: ld.global.v4.b32
// SM100: shfl.sync.bfly.b32
// SM100: bar.sync 0;

// SM90A: #nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// SM90A: .version 8.0
// SM90A: .target sm_90a

// PTX90: #nvvm.target<O = 3, chip = "sm_90", features = "+ptx90">
// PTX90: .version 9.0
// PTX90: .target sm_90
