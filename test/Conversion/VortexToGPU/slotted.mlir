// RUN: vortex-opt %S/../../Python/Inputs/slotted_flow.mlir --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
//
// The PTX assembles.
// REQUIRES: ptxas
// RUN: rm -rf %t && vortex-compile %S/../../Python/Inputs/slotted_flow.mlir --target=sm_90 -o %t
// RUN: od -An -c -N4 %t/staged.cubin | FileCheck %s --check-prefix=ELF
// ELF: 177   E   L   F

// Slotted fields on the GPU (docs/contract.md, "Slotted fields"): the cache
// kernel reads slot_of_ptr; the slotted fields' row count comes from the
// first one's extent; its guard flag is 8.
// CHECK: flags = {{{.*}}slot_of_ptr = 8 : i64
// CHECK-SAME: cache = #vortex.step<args = ["k", "v", "c", "stage", "stamp", "block_ids", "slot_of_ptr"]
// CHECK-SAME: kernel = "staged_cache_w0", {{[^>]*}}params = [#vortex.launch_param<name = "block_ids", kind = buffer>, #vortex.launch_param<name = "num_new", kind = scalar>, #vortex.launch_param<name = "c", kind = buffer>, #vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "stage", kind = buffer>, #vortex.launch_param<name = "stamp", kind = buffer>, #vortex.launch_param<name = "v", kind = buffer>, #vortex.launch_param<name = "slot_of_ptr", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "num_blocks", kind = scalar>]
// CHECK-SAME: reads = ["k", "v", "slot_of_ptr", "block_ids"]
// CHECK-SAME: writes = ["c", "stage", "stamp", "status"]

// CHECK-LABEL: gpu.func @staged_cache_w0(
// CHECK-SAME: %[[STAGE:arg4]]: memref<?xf32>
// CHECK-SAME: %[[MAP:arg7]]: memref<?xi32>, %[[STATUS:arg8]]: memref<?xi32>
// The block's slot, and the slotted rows (stage holds 1 x 8 per slot).
// CHECK: %[[SLOT:.*]] = memref.load %[[MAP]][
// CHECK: %[[DIM:.*]] = memref.dim %[[STAGE]]
// CHECK: arith.divui %[[DIM]], %c8
// A slot past them is recorded (flag 8) ...
// CHECK: memref.atomic_rmw ori %c8_i32, %[[STATUS]]
// ... and a block without a usable slot stores nothing.
// CHECK: arith.select
// CHECK: scf.if
// CHECK: memref.store {{.*}}, %[[STAGE]][
// CHECK: gpu.return
