// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
//
// The PTX assembles: vortex-compile (vortex-to-nvvm, then ptxas).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: vortex-compile %s --target=sm_90 -o %t
// RUN: od -An -c -N4 %t/int4_centroids.cubin | FileCheck %s --check-prefix=ELF
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/int4_centroids.manifest.json
//
// A packed int4 pool on the GPU (kv_dtype = i4, docs/gpu.md "INT4 KV"): a
// cache kernel that reads k takes k's bytes and k_int4_scale; each element
// is a byte load, unpacked where it loads ((byte >> 4 * (c % 2)) & 15),
// minus 7, times the channel's scale (v: the token's). The attend kernels
// read 4 bytes (8 channels) a lane with k's 8 scales or v's one.

!kv = !vortex.vtensor<?x16x80xf32, #vortex.format<paged>>
!q  = !vortex.vtensor<?x5x80xf32, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x80xf32, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x80xf32, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x80xf32, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
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

// CHECK: k = #vortex.tensor<role = cache, dtype = i8, shape = ["num_blocks", 16, 40]>
// CHECK-SAME: attend = #vortex.step<args = ["q", "k", "v", "kv_indptr", "kv_indices", "kv_last_len", "o", "lse", "sm_scale", "k_int4_scale", "v_int4_scale"]
// CHECK-SAME: cache = #vortex.step<args = ["k", "v", "kc", "vm", "block_ids", "k_int4_scale", "v_int4_scale"]
// CHECK-SAME: reads = ["k", "v", "k_int4_scale", "v_int4_scale", "block_ids"]

// CHECK-LABEL: gpu.func @int4_centroids_cache_w0(
// CHECK-SAME: %[[K:arg[0-9]+]]: memref<?xi8>, %[[KS:arg[0-9]+]]: memref<?xf32>, %{{.*}}: memref<?xf32>, %[[V:arg[0-9]+]]: memref<?xi8>, %[[VS:arg[0-9]+]]: memref<?xf32>
// k: the block's bytes at block * 16 * 40, channel c in byte c / 2 ...
// CHECK: %[[KROW:.*]] = arith.muli %{{.*}}, %c640 : index
// CHECK: %[[C:.*]] = arith.minui %{{.*}}, %c79 : index
// CHECK: %[[BYTE:.*]] = arith.divui %[[C]], %c2 : index
// CHECK: %[[AT:.*]] = arith.addi %[[KROW]], %{{.*}} : index
// CHECK: %[[B:.*]] = memref.load %[[K]][%[[AT]]] : memref<?xi8>
// ... the nibble 4 * (c % 2) bits up, minus 7, times the channel's scale.
// CHECK: %[[ODD:.*]] = arith.remui %[[C]], %c2
// CHECK: %[[SH:.*]] = arith.index_cast %{{.*}} : index to i8
// CHECK: %[[HI:.*]] = arith.shrui %[[B]], %[[SH]] : i8
// CHECK: %[[N:.*]] = arith.andi %[[HI]], %c15_i8 : i8
// CHECK: %[[F:.*]] = arith.uitofp %[[N]] : i8 to f32
// CHECK: %[[Q:.*]] = arith.subf %[[F]], %{{.*}} : f32
// CHECK: %[[S:.*]] = memref.load %[[KS]][%{{.*}}] : memref<?xf32>
// CHECK: arith.mulf %[[Q]], %[[S]] : f32
// v: one scale a token (row), loaded once per row.
// CHECK: %[[VSC:.*]] = memref.load %[[VS]][%{{.*}}] : memref<?xf32>
// CHECK: %[[VB:.*]] = memref.load %[[V]][%{{.*}}] : memref<?xi8>
// CHECK: arith.shrui %[[VB]]
// CHECK: %[[VQ:.*]] = arith.subf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.mulf %[[VQ]], %[[VSC]] : f32
// CHECK: gpu.return

// The attend split kernel: the bytes in k's and v's places, the scales
// after kv_splits; a lane loads 4 bytes of a token (8 channels) with k's 8
// per-channel scales of its block, or v's per-token scale, and unpacks
// them where it computes (the low nibble first).
// CHECK-LABEL: gpu.func @int4_centroids_attend_split(
// CHECK-SAME: %{{.*}}: memref<?xf32>, %[[AK:arg[0-9]+]]: memref<?xi8>, %[[AV:arg[0-9]+]]: memref<?xi8>
// CHECK-SAME: %{{.*}}: i32, %[[AKS:arg[0-9]+]]: memref<?xf32>, %[[AVS:arg[0-9]+]]: memref<?xf32>)
// CHECK: vector.load %[[AK]][%{{.*}}] {alignment = 4 : i64, nontemporal = true} : memref<?xi8>, vector<4xi8>
// CHECK: vector.load %[[AKS]][%{{.*}}] {alignment = 16 : i64} : memref<?xf32>, vector<8xf32>
// CHECK: vector.load %[[AV]][%{{.*}}] {alignment = 4 : i64, nontemporal = true} : memref<?xi8>, vector<4xi8>
// CHECK: memref.load %[[AVS]][%{{.*}}] : memref<?xf32>
// CHECK: scf.for
// CHECK: %[[LO:.*]] = arith.andi %{{.*}}, %c15_i8 : i8
// CHECK: arith.uitofp %[[LO]] : i8 to f32
// CHECK: %[[HI:.*]] = arith.shrui %{{.*}}, %c4_i8 : i8
// CHECK: arith.andi %[[HI]], %c15_i8 : i8
// CHECK-LABEL: gpu.func @int4_centroids_attend_combine(

// MANIFEST: "k": {
// MANIFEST-NEXT: "dtype": "u8",
// MANIFEST: "k_int4_scale": {
// MANIFEST-NEXT: "dtype": "f32",

// ELF: 177 E L F
