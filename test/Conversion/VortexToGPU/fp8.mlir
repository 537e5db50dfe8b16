// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
//
// The PTX assembles: vortex-compile (vortex-to-nvvm, then ptxas) of both
// flows, with their manifests.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t && split-file %s %t
// RUN: vortex-compile %t/e4m3.mlir --target=sm_90 -o %t/out
// RUN: vortex-compile %t/e5m2.mlir --target=sm_90 -o %t/out
// RUN: od -An -c -N4 %t/out/centroids_e4m3.cubin | FileCheck %s --check-prefix=ELF
// RUN: od -An -c -N4 %t/out/centroids_e5m2.cubin | FileCheck %s --check-prefix=ELF
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/out/centroids_e4m3.manifest.json

// fp8 k and v (kv_dtype): loaded 16 elements (16 bytes) a lane, each widened by
// arith.extf (vortex-gpu-lower-fp8 then rewrites it into what LLVM 22's
// NVPTX can select); fields stay in the intermediate dtype.

//--- e4m3.mlir
!kv = !vortex.vtensor<?x16x128xf8E4M3FN, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @centroids_e4m3
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = f8E4M3FN>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// 16 bytes a lane: 8 lanes for the 128 fp8 columns of k.
// CHECK-LABEL: gpu.func @centroids_e4m3_cache_w0(
// CHECK-SAME: %{{.+}}: memref<?xf8E4M3FN>
// CHECK-SAME: vortex.plan = #vortex.workload_plan<lanes = 8,
// CHECK: vector.load %{{.+}} {alignment = 16 : i64, nontemporal = true} : memref<?xf8E4M3FN>, vector<16xf8E4M3FN>
// CHECK: arith.extf %{{.+}} : f8E4M3FN to f32
// CHECK: gpu.return

// MANIFEST: "k": {
// MANIFEST-NEXT: "dtype": "f8E4M3FN",

// ELF: 177 E L F

// -----

//--- e5m2.mlir
!kv = !vortex.vtensor<?x16x128xf8E5M2, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @centroids_e5m2
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = f8E5M2>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.max %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-LABEL: gpu.func @centroids_e5m2_cache_w0(
// CHECK: arith.extf %{{.+}} : f8E5M2 to f32
// CHECK: gpu.return
