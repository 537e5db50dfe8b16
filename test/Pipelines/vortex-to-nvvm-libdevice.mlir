// libdevice: with a CUDA toolkit (cuda-path, else $CUDA_HOME, $CUDA_ROOT,
// $CUDA_PATH, else /usr/local/cuda) math.exp becomes __nv_expf, linked and
// inlined; no libdevice call is left for ptxas to resolve.
//
// REQUIRES: cuda-toolkit
// RUN: env -u CUDA_HOME -u CUDA_ROOT -u CUDA_PATH \
// RUN:   vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm='cuda-path=%cuda_path' \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
// RUN: env CUDA_HOME=%cuda_path vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
//
// A toolkit without libdevice is rejected up front (gpu-module-to-binary
// would report it, then go on and leave the call unresolved).
// RUN: rm -rf %t && mkdir -p %t/cuda
// RUN: not vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm='cuda-path=%t/cuda' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOLIB
// RUN: not env CUDA_HOME=%t/cuda vortex-opt %S/Inputs/demo-kernels.mlir \
// RUN:   --vortex-to-nvvm 2>&1 | FileCheck %s --check-prefix=NOLIB-ENV

// CHECK-NOT: .extern .func
// CHECK-NOT: __nv_
// CHECK: .visible .entry demo_row(
// CHECK-NOT: call
// CHECK: ex2.approx.ftz.f32
// CHECK-NOT: __nv_

// NOLIB: error: no libdevice in the CUDA toolkit '{{.*}}cuda' (from cuda-path): expected nvvm/libdevice/libdevice.10.bc there
// NOLIB-ENV: error: no libdevice in the CUDA toolkit '{{.*}}cuda' (from the environment)
