// RUN: vortex-opt %s --pass-pipeline='builtin.module(gpu.module(vortex-gpu-lower-vector-transfers))' | FileCheck %s

gpu.module @kernels {
  // CHECK-LABEL: gpu.func @transfers
  //  CHECK-SAME: (%[[A:.*]]: memref<?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[N:.*]]: index, %[[I:.*]]: index)
  gpu.func @transfers(%a: memref<?xf32>, %b: memref<?x?xf32>, %n: index, %i: index) kernel {
    %pad = arith.constant 0.0 : f32
    // The mask is materialized as a lane-index comparison.
    //   CHECK-DAG: %[[PAD:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
    //   CHECK-DAG: %[[STEP:.*]] = arith.constant dense<[0, 1, 2, 3]> : vector<4xi64>
    //       CHECK: %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
    //       CHECK: %[[NV:.*]] = vector.broadcast %[[N64]] : i64 to vector<4xi64>
    //       CHECK: %[[M:.*]] = arith.cmpi sgt, %[[NV]], %[[STEP]] : vector<4xi64>
    %mask = vector.create_mask %n : vector<4xi1>

    // Masked, in bounds: a masked load with the padding as pass-through.
    //       CHECK: %[[R0:.*]] = vector.maskedload %[[A]][%[[I]]], %[[M]], %[[PAD]]
    %r0 = vector.transfer_read %a[%i], %pad, %mask {in_bounds = [true]} : memref<?xf32>, vector<4xf32>
    // In bounds: a plain load.
    //       CHECK: %[[R1:.*]] = vector.load %[[A]][%[[I]]] : memref<?xf32>, vector<4xf32>
    %r1 = vector.transfer_read %a[%i], %pad {in_bounds = [true]} : memref<?xf32>, vector<4xf32>
    // Maybe out of bounds: masked by the remaining extent of the buffer.
    //       CHECK: %[[DIM:.*]] = memref.dim %[[A]]
    //       CHECK: %[[REM:.*]] = arith.subi %[[DIM]], %[[I]]
    //       CHECK: %[[REM64:.*]] = arith.index_cast %[[REM]]
    //       CHECK: %[[REMV:.*]] = vector.broadcast %[[REM64]]
    //       CHECK: %[[OOB:.*]] = arith.cmpi sgt, %[[REMV]], %[[STEP]]
    //       CHECK: %[[R2:.*]] = vector.maskedload %[[A]][%[[I]]], %[[OOB]], %[[PAD]]
    %r2 = vector.transfer_read %a[%i], %pad : memref<?xf32>, vector<4xf32>
    // vector.mask around a transfer: same as the mask operand.
    //       CHECK: %[[R3:.*]] = vector.maskedload %[[A]][%[[I]]], %[[M]], %[[PAD]]
    %r3 = vector.mask %mask { vector.transfer_read %a[%i], %pad {in_bounds = [true]} : memref<?xf32>, vector<4xf32> } : vector<4xi1> -> vector<4xf32>
    // 2-D: unrolled into 1-D rows.
    //       CHECK: %[[ROW0:.*]] = vector.load %[[B]][%[[I]], %[[I]]] : memref<?x?xf32>, vector<4xf32>
    //       CHECK: %[[I1:.*]] = affine.apply
    //       CHECK: %[[ROW1:.*]] = vector.load %[[B]][%[[I1]], %[[I]]] : memref<?x?xf32>, vector<4xf32>
    %r4 = vector.transfer_read %b[%i, %i], %pad {in_bounds = [true, true]} : memref<?x?xf32>, vector<2x4xf32>
    // A broadcast read: one element, then a scalar broadcast (no 0-D vector
    // broadcast, which convert-gpu-to-nvvm cannot lower).
    //       CHECK: %[[E0D:.*]] = vector.load %[[B]][%[[I]], %[[I]]] : memref<?x?xf32>, vector<f32>
    //       CHECK: %[[E:.*]] = vector.extract %[[E0D]][] : f32 from vector<f32>
    //       CHECK: %[[R5:.*]] = vector.broadcast %[[E]] : f32 to vector<4xf32>
    %r5 = vector.transfer_read %b[%i, %i], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (0)>} : memref<?x?xf32>, vector<4xf32>
    %s0 = arith.addf %r0, %r1 : vector<4xf32>
    %s1 = arith.addf %s0, %r2 : vector<4xf32>
    %s2 = arith.addf %s1, %r3 : vector<4xf32>
    //       CHECK: %[[S:.*]] = arith.addf %{{.*}}, %[[R5]]
    %s3 = arith.addf %s2, %r5 : vector<4xf32>
    //       CHECK: vector.maskedstore %[[A]][%[[I]]], %[[M]], %[[S]]
    vector.transfer_write %s3, %a[%i], %mask {in_bounds = [true]} : vector<4xf32>, memref<?xf32>
    //       CHECK: %[[WOOB:.*]] = arith.cmpi sgt
    //       CHECK: vector.maskedstore %[[A]][%[[I]]], %[[WOOB]], %[[S]]
    vector.transfer_write %s3, %a[%i] : vector<4xf32>, memref<?xf32>
    //       CHECK: vector.maskedstore %[[A]][%[[I]]], %[[M]], %[[S]]
    vector.mask %mask { vector.transfer_write %s3, %a[%i] {in_bounds = [true]} : vector<4xf32>, memref<?xf32> } : vector<4xi1>
    //       CHECK: vector.store %[[ROW0]], %[[B]][%[[I]], %[[I]]]
    //       CHECK: vector.store %[[ROW1]], %[[B]][%{{.*}}, %[[I]]]
    vector.transfer_write %r4, %b[%i, %i] {in_bounds = [true, true]} : vector<2x4xf32>, memref<?x?xf32>
    // Already lowered ops are left alone.
    //       CHECK: vector.load %[[A]][%[[I]]] {alignment = 16 : i64}
    %v = vector.load %a[%i] {alignment = 16} : memref<?xf32>, vector<4xf32>
    vector.store %v, %a[%i] : memref<?xf32>, vector<4xf32>
    //   CHECK-NOT: vector.transfer_
    //   CHECK-NOT: vector.mask
    //       CHECK: gpu.return
    gpu.return
  }
}

// Outside the gpu.module the pass (anchored on it) does not run.
// CHECK-LABEL: func.func @host
//       CHECK: vector.transfer_read
func.func @host(%a: memref<?xf32>, %i: index) -> vector<4xf32> {
  %pad = arith.constant 0.0 : f32
  %r = vector.transfer_read %a[%i], %pad : memref<?xf32>, vector<4xf32>
  return %r : vector<4xf32>
}
