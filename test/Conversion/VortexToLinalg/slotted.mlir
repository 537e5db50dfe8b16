// RUN: vortex-opt %S/../../Python/Inputs/slotted_flow.mlir --vortex-cpu-stage-linalg | FileCheck %s

// Slotted fields on the CPU (docs/contract.md, "Slotted fields"): the cache
// step takes slot_of_ptr last; slotted fields have num_slots rows.
// CHECK: symbols = {{{.*}}num_slots = "stage"
// CHECK-SAME: slot_of_ptr = #vortex.tensor<role = input, dtype = i32, shape = ["num_blocks"]>
// CHECK-SAME: stage = #vortex.tensor<role = cache, dtype = f32, shape = ["num_slots", 1, 8]>
// CHECK-SAME: cache = #vortex.step<args = ["k", "v", "c", "stage", "stamp", "block_ids", "slot_of_ptr"]

// The indexer step still takes the slotted fields (never read).
// CHECK-LABEL: func.func @staged_indexer(
// CHECK-SAME: {vortex.name = "stage"}

// The cache step: slot_ids[s] = slot_of_ptr[block_ids[s]] ...
// CHECK-LABEL: func.func @staged_cache(
// CHECK-SAME: %[[IDS:arg[0-9]+]]: memref<?xi32> {vortex.name = "block_ids"}, %[[MAP:arg[0-9]+]]: memref<?xi32> {vortex.name = "slot_of_ptr"})
// CHECK: %[[IDT:.*]] = bufferization.to_tensor %[[IDS]]
// CHECK: %[[MAPT:.*]] = bufferization.to_tensor %[[MAP]]
// CHECK: %[[SLOTS:.*]] = scf.for
// CHECK:   %[[B:.*]] = tensor.extract %[[IDT]]
// CHECK:   %[[BI:.*]] = arith.index_cast %[[B]]
// CHECK:   %[[S:.*]] = tensor.extract %[[MAPT]][%[[BI]]]
// CHECK:   tensor.insert %[[S]]
// ... every write is skipped where the slot is < 0: the paged field c at
// the block id, the slotted fields at the slot.
// CHECK: scf.for
// CHECK:   %[[S1:.*]] = tensor.extract %[[SLOTS]]
// CHECK:   arith.cmpi sge, %[[S1]], %c0_i32
// CHECK:   scf.if
// CHECK:     tensor.extract %[[IDT]]
// CHECK:     tensor.insert_slice {{.*}} [1, 1, 8]
// CHECK: scf.for
// CHECK:   %[[S2:.*]] = tensor.extract %[[SLOTS]]
// CHECK:   arith.cmpi sge, %[[S2]], %c0_i32
// CHECK:   scf.if
// CHECK:     %[[ROW:.*]] = arith.index_cast %[[S2]]
// CHECK:     tensor.insert_slice {{.*}}[%[[ROW]], 0, 0] [1, 1, 8]
