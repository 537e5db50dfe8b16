// RUN: vortex-opt %s --convert-vortex-to-linalg --canonicalize | FileCheck %s
// RUN: vortex-opt %s --vortex-cpu-stage-linalg | FileCheck %s --check-prefix=STAGE
// RUN: vortex-opt %s | vortex-opt | FileCheck %s --check-prefix=ROUND
//
// A packed int4 pool on the CPU (kv_dtype = i4, docs/contract.md "INT4
// KV"): k and v are bytes [?, 16, 40] (head_dim 80 at two channels a byte),
// their scales the last two arguments of both steps; each read of k or v
// unpacks its nibble where it loads ((byte >> 4 * (j % 2)) & 15), subtracts
// the bias 7 and multiplies by the per-channel K scale or the per-token V
// scale. No dequantized copy of the pool is left; the attend step takes
// the bytes and the scales too.

!kv = !vortex.vtensor<?x16x80xf32, #vortex.format<paged>>
!q  = !vortex.vtensor<?x5x80xf32, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x80xf32, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x80xf32, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x80xf32, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>

// ROUND: kv_dtype = i4>
vortex.flow @int4_centroids
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 80,
        group_size = 5, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = f32,
        kv_dtype = i4>
    fields(kc = [1, 80], vm = [1, 80])
cache(%k: !kv, %v: !kv, %kc: !c, %vm: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %kc : !cr into !c
  %x = vortex.max %v {dim = 1 : i64} : !kv -> !cr
  vortex.write %x into %vm : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %kc: !c, %vm: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %kc : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// The manifest: k and v bytes, the scales last in every step.
// CHECK: k = #vortex.tensor<role = cache, dtype = i8, shape = ["num_blocks", 16, 40]>
// CHECK-SAME: k_int4_scale = #vortex.tensor<role = cache, dtype = f32, shape = ["num_blocks", 1, 80]>
// CHECK-SAME: v = #vortex.tensor<role = cache, dtype = i8, shape = ["num_blocks", 16, 40]>
// CHECK-SAME: v_int4_scale = #vortex.tensor<role = cache, dtype = f32, shape = ["num_blocks", 16, 1]>
// CHECK-SAME: steps = {attend = #vortex.step<args = ["q", "k", "v", "kv_indptr", "kv_indices", "kv_last_len", "o", "lse", "sm_scale", "k_int4_scale", "v_int4_scale"]
// CHECK-SAME: cache = #vortex.step<args = ["k", "v", "kc", "vm", "block_ids", "k_int4_scale", "v_int4_scale"]
// CHECK-SAME: indexer = #vortex.step<args = ["q", "k", "v", "kc", "vm", "dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices", "k_int4_scale", "v_int4_scale"]

// CHECK-LABEL: func.func @int4_centroids_indexer(
// CHECK-SAME: memref<?x16x40xi8> {vortex.name = "k"}, %{{.*}}: memref<?x16x40xi8> {vortex.name = "v"}
// CHECK-SAME: memref<?x1x80xf32> {vortex.name = "k_int4_scale"}, %{{.*}}: memref<?x16x1xf32> {vortex.name = "v_int4_scale"})

// CHECK-LABEL: func.func @int4_centroids_cache(
// CHECK-SAME: %[[K:arg0]]: memref<?x16x40xi8> {vortex.name = "k"}, %[[V:arg1]]: memref<?x16x40xi8> {vortex.name = "v"}
// CHECK-SAME: %[[KS:arg5]]: memref<?x1x80xf32> {vortex.name = "k_int4_scale"}, %[[VS:arg6]]: memref<?x16x1xf32> {vortex.name = "v_int4_scale"})
// CHECK-DAG: %[[KT:.*]] = bufferization.to_tensor %[[K]] restrict :
// CHECK-DAG: %[[KST:.*]] = bufferization.to_tensor %[[KS]] restrict :
// CHECK-DAG: %[[VT:.*]] = bufferization.to_tensor %[[V]] restrict :
// CHECK-DAG: %[[VST:.*]] = bufferization.to_tensor %[[VS]] restrict :
// CHECK-NOT: ins(%[[KT]]
// k of the new blocks, gathered by block id and unpacked where it loads:
// byte j / 2, shifted by 4 * (j % 2), masked, minus 7, times the channel's
// scale.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x16x80xf32>)
// CHECK: %[[KB:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[KJ:.*]] = arith.minsi %{{.*}}, %c79
// CHECK: %[[KBYTE:.*]] = arith.divui %[[KJ]], %c2
// CHECK: %[[KX:.*]] = tensor.extract %[[KT]][%[[KB]], %{{.*}}, %[[KBYTE]]] : tensor<?x16x40xi8>
// CHECK: %[[KODD:.*]] = arith.remui %[[KJ]], %c2
// CHECK: %[[KSH4:.*]] = arith.muli %[[KODD]], %c4
// CHECK: %[[KSH:.*]] = arith.index_cast %[[KSH4]] : index to i8
// CHECK: %[[KHI:.*]] = arith.shrui %[[KX]], %[[KSH]] : i8
// CHECK: %[[KN:.*]] = arith.andi %[[KHI]], %c15_i8 : i8
// CHECK: %[[KF:.*]] = arith.uitofp %[[KN]] : i8 to f32
// CHECK: %[[KQ:.*]] = arith.subf %[[KF]], %[[SEVEN:cst_[0-9]+]] : f32
// CHECK: %[[KSC:.*]] = tensor.extract %[[KST]][%[[KB]], %c0, %[[KJ]]] : tensor<?x1x80xf32>
// CHECK: arith.mulf %[[KQ]], %[[KSC]] : f32
// v: the same unpack, times the token's scale.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x16x80xf32>)
// CHECK: %[[VB:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[VI:.*]] = arith.minsi %{{.*}}, %c15
// CHECK: tensor.extract %[[VT]][%[[VB]], %[[VI]], %{{.*}}] : tensor<?x16x40xi8>
// CHECK: arith.shrui
// CHECK: %[[VQ:.*]] = arith.subf %{{.*}}, %[[SEVEN]] : f32
// CHECK: %[[VSC:.*]] = tensor.extract %[[VST]][%[[VB]], %[[VI]], %c0] : tensor<?x16x1xf32>
// CHECK: arith.mulf %[[VQ]], %[[VSC]] : f32
// The attend step: the bytes and the scales, unpacked by its gathers
// (attend.mlir has the op's lowering).
// CHECK-LABEL: func.func @int4_centroids_attend(
// CHECK-SAME: memref<?x16x40xi8> {vortex.name = "k"}, %{{.*}}: memref<?x16x40xi8> {vortex.name = "v"}
// CHECK-SAME: memref<?x1x80xf32> {vortex.name = "k_int4_scale"}, %{{.*}}: memref<?x16x1xf32> {vortex.name = "v_int4_scale"})
// CHECK-COUNT-2: arith.shrui

// The whole CPU stage lowers it: two unpacking loads a step.
// STAGE: func.func @int4_centroids_indexer
// STAGE: func.func @int4_centroids_cache
// STAGE-COUNT-2: arith.shrui
// STAGE: func.func @int4_centroids_attend
// STAGE-COUNT-2: arith.shrui
