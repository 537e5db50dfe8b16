// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
//
// The PTX assembles (vortex-to-nvvm, then ptxas).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: vortex-compile %s --target=sm_90 -o %t
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/mla_wide.manifest.json
//
// Rows wider than a warp's 256 columns (docs/gpu.md, "Attention"): an MLA
// flow's latent of 512 + 64 = 576 channels, 20 heads on it. A lane holds
// a slice of 8 columns in each of 3 chunks of 256 (col, col + 256, col +
// 512); the third chunk's slice past column 576 loads column 0 and is
// selected away. Each K and V row is loaded as 3 vectors a token; 2 tokens
// a group per iteration and 2 heads a pass (10 passes for 20 heads, the
// grid's z: launch grid_z) keep
// q, the accumulators and the in-flight rows in registers. The merge buffer
// holds 4 groups x 2 heads x 768 padded columns.

!kv = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x576xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x576xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x576xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @mla_wide
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(centroids = [1, 576])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-LABEL: gpu.func @mla_wide_attend_split(
// CHECK-SAME: %[[Q:arg0]]: memref<?xbf16>, %[[K:arg1]]: memref<?xbf16>, %[[V:arg2]]: memref<?xbf16>
// CHECK-SAME: memref<6144xf32, #gpu.address_space<workgroup>>
// The lane's three slices; the third is inside D only for col < 64.
// CHECK: %[[C1:.*]] = arith.addi %[[COL:.*]], %c256 : index
// CHECK: %[[C2:.*]] = arith.addi %[[COL]], %c512 : index
// CHECK: %[[OK:.*]] = arith.cmpi slt, %[[C2]], %c576 : index
// CHECK: arith.select %[[OK]], %[[C2]], %{{.*}} : index
// A pass of 2 heads (the grid's z picks which); q's three slices a head.
// CHECK: gpu.block_id  z
// CHECK-COUNT-6: vector.load %[[Q]][%{{.*}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// The first iteration's rows: 2 tokens x 3 slices of K, then of V.
// CHECK-COUNT-6: vector.load %[[K]][%{{.*}}] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-COUNT-6: vector.load %[[V]][%{{.*}}] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK: scf.for {{.*}} -> (f32, f32,
// CHECK-SAME: vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>) {
// CHECK-COUNT-6: vector.load %[[K]]
// The third slice's dot product is selected away past D.
// CHECK: arith.select %[[OK]], %{{.*}}, %{{.*}} : f32
// CHECK-LABEL: gpu.func @mla_wide_attend_combine(

// The 10 passes are the split kernel's grid z, side by side.
// MANIFEST: "attend": {
// MANIFEST: "grid": {
// MANIFEST-NEXT: "kind": "row_splits",
// MANIFEST-NEXT: "z": 10
// MANIFEST: "kernel": "mla_wide_attend_split"
