// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-subgroup-reduce | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-subgroup-reduce=subgroup-size=64 | FileCheck %s --check-prefix=SG64

// A full-warp f32 sum: five xor butterflies over a width of 32 lanes.
// CHECK-LABEL: func.func @full_f32
//  CHECK-SAME: (%[[X:.*]]: f32)
//   CHECK-DAG: %[[W:.*]] = arith.constant 32 : i32
//   CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i32
//   CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i32
//       CHECK: %[[S0:.*]], %{{.*}} = gpu.shuffle xor %[[X]], %[[C1]], %[[W]] : f32
//       CHECK: %[[A0:.*]] = arith.addf %[[X]], %[[S0]] : f32
// CHECK-COUNT-3: gpu.shuffle xor
//       CHECK: %[[S4:.*]], %{{.*}} = gpu.shuffle xor %[[A3:.*]], %[[C16]], %[[W]] : f32
//       CHECK: %[[A4:.*]] = arith.addf %[[A3]], %[[S4]] : f32
//   CHECK-NOT: gpu.shuffle
//       CHECK: return %[[A4]]
// SG64-LABEL: func.func @full_f32
// SG64-COUNT-6: gpu.shuffle xor %{{.*}}, %{{.*}}, %c64_i32 : f32
//  SG64-NEXT: arith.addf
//  SG64-NEXT: return
func.func @full_f32(%x: f32) -> f32 {
  %r = gpu.subgroup_reduce add %x : (f32) -> f32
  return %r : f32
}

// -----

// Clusters of 16 lanes: offsets 1, 2, 4, 8 only.
// CHECK-LABEL: func.func @clustered_max
//   CHECK-NOT: gpu.subgroup_reduce
//   CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i32
//   CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i32
//   CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i32
//   CHECK-DAG: %[[C8:.*]] = arith.constant 8 : i32
//       CHECK: gpu.shuffle xor %{{.*}}, %[[C1]]
//       CHECK: arith.maxnumf
//       CHECK: gpu.shuffle xor %{{.*}}, %[[C2]]
//       CHECK: gpu.shuffle xor %{{.*}}, %[[C4]]
//       CHECK: gpu.shuffle xor %{{.*}}, %[[C8]]
//       CHECK: arith.maxnumf
//   CHECK-NOT: gpu.shuffle
func.func @clustered_max(%x: f32) -> f32 {
  %r = gpu.subgroup_reduce maxnumf %x cluster(size = 16) : (f32) -> f32
  return %r : f32
}

// -----

// Clusters of 4 lanes with stride 8: offsets 8 and 16.
// CHECK-LABEL: func.func @strided
//   CHECK-DAG: %[[C8:.*]] = arith.constant 8 : i32
//   CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i32
//       CHECK: gpu.shuffle xor %{{.*}}, %[[C8]]
//       CHECK: gpu.shuffle xor %{{.*}}, %[[C16]]
//   CHECK-NOT: gpu.shuffle
func.func @strided(%x: f32) -> f32 {
  %r = gpu.subgroup_reduce add %x cluster(size = 4, stride = 8) : (f32) -> f32
  return %r : f32
}

// -----

// Narrow values ride in 32-bit shuffles: an f16 is zero-extended, two f16
// lanes of a vector share one i32.
// CHECK-LABEL: func.func @narrow
//       CHECK: arith.bitcast %{{.*}} : f16 to i16
//       CHECK: arith.extui %{{.*}} : i16 to i32
//       CHECK: gpu.shuffle xor %{{.*}} : i32
//       CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK-COUNT-4: gpu.shuffle xor %{{.*}} : i32
//       CHECK: vector.bitcast %{{.*}} : vector<2xf16> to vector<1xi32>
// CHECK-COUNT-5: gpu.shuffle xor %{{.*}} : i32
//       CHECK: arith.mulf %{{.*}} : vector<2xf16>
//   CHECK-NOT: gpu.shuffle
func.func @narrow(%h: f16, %v: vector<2xf16>) -> (f16, vector<2xf16>) {
  %a = gpu.subgroup_reduce add %h uniform : (f16) -> f16
  %b = gpu.subgroup_reduce mul %v : (vector<2xf16>) -> vector<2xf16>
  return %a, %b : f16, vector<2xf16>
}

// -----

// Vectors of 32-bit elements are reduced per element (upstream only splits
// vectors of narrower elements); 64-bit scalars use 64-bit shuffles, which
// convert-gpu-to-nvvm splits into two.
// CHECK-LABEL: func.func @wide
//       CHECK: vector.extract %{{.*}}[0] : f32 from vector<4xf32>
//       CHECK: gpu.shuffle xor %{{.*}} : f32
//       CHECK: vector.extract %{{.*}}[3] : f32 from vector<4xf32>
//       CHECK: gpu.shuffle xor %{{.*}} : f32
//       CHECK: %[[V:.*]] = vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-COUNT-3: gpu.shuffle xor %{{.*}} : f64
// CHECK-COUNT-5: gpu.shuffle xor %{{.*}} : i32
//       CHECK: arith.maxsi
//   CHECK-NOT: gpu.subgroup_reduce
func.func @wide(%w: vector<4xf32>, %d: f64, %i: i32) -> (vector<4xf32>, f64, i32) {
  %a = gpu.subgroup_reduce add %w cluster(size = 2) : (vector<4xf32>) -> vector<4xf32>
  %b = gpu.subgroup_reduce add %d cluster(size = 8) : (f64) -> f64
  %c = gpu.subgroup_reduce maxsi %i : (i32) -> i32
  return %a, %b, %c : vector<4xf32>, f64, i32
}

// -----

// Subgroup queries become thread-id arithmetic.
// CHECK-LABEL: func.func @queries
//   CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
//   CHECK-DAG: %[[C31:.*]] = arith.constant 31 : index
//       CHECK: %[[BX:.*]] = gpu.block_dim x
//       CHECK: %[[BY:.*]] = gpu.block_dim y
//       CHECK: %[[XY:.*]] = arith.muli %[[BX]], %[[BY]]
//       CHECK: %[[BZ:.*]] = gpu.block_dim z
//       CHECK: %[[T:.*]] = arith.muli %[[XY]], %[[BZ]]
//       CHECK: %[[R:.*]] = arith.addi %[[T]], %[[C31]]
//       CHECK: %[[N:.*]] = arith.divui %[[R]], %[[C32]]
//       CHECK: gpu.thread_id x
//       CHECK: %[[ID:.*]] = arith.divui %{{.*}}, %[[C32]]
//       CHECK: return %[[C32]], %[[N]], %[[ID]]
// SG64-LABEL: func.func @queries
//   SG64-DAG: %[[C64:.*]] = arith.constant 64 : index
//       SG64: return %[[C64]]
func.func @queries() -> (index, index, index) {
  %s = gpu.subgroup_size : index
  %n = gpu.num_subgroups : index
  %id = gpu.subgroup_id : index
  return %s, %n, %id : index, index, index
}

// -----

// Left alone: gpu.all_reduce (convert-gpu-to-nvvm lowers it) and shuffles.
// CHECK-LABEL: func.func @untouched
//       CHECK: gpu.all_reduce add %{{.*}} uniform
//       CHECK: gpu.shuffle idx
func.func @untouched(%x: f32, %o: i32, %w: i32) -> (f32, f32) {
  %a = gpu.all_reduce add %x uniform {} : (f32) -> f32
  %s, %v = gpu.shuffle idx %x, %o, %w : f32
  return %a, %s : f32, f32
}
