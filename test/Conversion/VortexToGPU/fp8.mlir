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

// fp8 k and v (kv_dtype): loaded as bytes, widened to f32 from their bits
// (LLVM 22's NVVM path cannot serialize arith.extf from fp8); fields stay
// in the intermediate dtype.

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

// e4m3fn: S.EEEE.MMM; a normal number's exponent is rebiased by 127 - 7 =
// 120 into f32's, a subnormal is M * 2^-9, S.1111.111 is NaN.
// CHECK-LABEL: gpu.func @centroids_e4m3_cache_w0(
// CHECK-SAME: %{{.+}}: memref<?xf8E4M3FN>
// CHECK: vector.load %{{.+}} : memref<?xf8E4M3FN>, vector<8xf8E4M3FN>
// CHECK: %[[B:.+]] = arith.bitcast %{{.+}} : f8E4M3FN to i8
// CHECK: %[[X:.+]] = arith.extui %[[B]] : i8 to i32
// CHECK: arith.constant 120 : i32
// CHECK: arith.constant 0.001953125 : f32
// CHECK: arith.constant 2143289344 : i32
// CHECK: arith.bitcast %{{.+}} : i32 to f32
// CHECK-NOT: arith.extf %{{.+}} : f8E4M3FN
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

// e5m2 is the high byte of an f16.
// CHECK-LABEL: gpu.func @centroids_e5m2_cache_w0(
// CHECK: %[[B:.+]] = arith.bitcast %{{.+}} : f8E5M2 to i8
// CHECK: %[[W:.+]] = arith.extui %[[B]] : i8 to i16
// CHECK: %[[H:.+]] = arith.shli %[[W]], %{{.+}} : i16
// CHECK: %[[F:.+]] = arith.bitcast %[[H]] : i16 to f16
// CHECK: arith.extf %[[F]] : f16 to f32
// CHECK-NOT: arith.extf %{{.+}} : f8E5M2
// CHECK: gpu.return
