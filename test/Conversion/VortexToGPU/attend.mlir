// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="attend-mma=false" | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s --check-prefix=MMA
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="attend=off" | FileCheck %s --check-prefix=OFF
// The vortex-to-nvvm option reaches the pass, and sm_75 (no bf16 mma.sync)
// keeps the CUDA-core kernel.
// RUN: vortex-opt %s --split-input-file --vortex-nvvm-stage-lower | FileCheck %s --check-prefix=NVVM
// RUN: vortex-opt %s --split-input-file --vortex-nvvm-stage-lower="to-gpu=attend-mma=false" | FileCheck %s --check-prefix=NVVM-OFF
// RUN: vortex-opt %s --split-input-file --vortex-nvvm-stage-lower="chip=sm_75" | FileCheck %s --check-prefix=NVVM-OFF
//
// The PTX assembles, and the manifest records the attend step.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t && split-file %s %t
// RUN: vortex-compile %t/bf16.mlir --target=sm_90 -o %t/out
// RUN: vortex-compile %t/e4m3.mlir --target=sm_90 -o %t/out
// RUN: vortex-compile %t/att_t2.mlir --target=sm_90 -o %t/out
// RUN: vortex-compile %t/att_h20.mlir --target=sm_90 -o %t/out
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/out/att_bf16.manifest.json
// RUN: od -An -c -N4 %t/out/att_e4m3.cubin | FileCheck %s --check-prefix=ELF

// The attend step (docs/gpu.md, "Attention"): a split kernel of one CTA per
// (row, split) and a combine kernel. On CUDA cores (attend-mma=false; the
// CHECK lines) a group of 16 lanes holds a D = 128
// row, 16 bytes a lane; each K and V row is loaded once, for all 8 heads of
// the row: the first iteration's 4 tokens before the loop, the next
// iteration's 4 in each iteration (prefetch), and no other K/V load. The
// dot products reduce-scatter over the group's lanes with xor shuffles,
// and each lane reads the other heads' p with indexed shuffles.

//--- bf16.mlir
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @att_bf16
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
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

// CHECK-LABEL: gpu.func @att_bf16_attend_split(
// CHECK-SAME: %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xi32>, %{{.+}}: memref<?xi32>, %{{.+}}: memref<?xi32>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: i32)
// CHECK-SAME: workgroup(
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: gpu.block_id  y
// The q rows of the 8 heads, once.
// CHECK-COUNT-8: vector.load %{{.+}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-COUNT-8: vector.load %{{.+}} {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK: scf.for
// CHECK-COUNT-8: vector.load %{{.+}} {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK-COUNT-4: gpu.shuffle  xor %{{.+}}, %c8_i32
// CHECK-NOT: gpu.shuffle  xor %{{.+}}, %c8_i32
// CHECK-COUNT-2: gpu.shuffle  xor %{{.+}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32
// CHECK: math.exp2
// CHECK: gpu.shuffle  idx
// CHECK: scf.yield
// CHECK: gpu.barrier
// CHECK: math.log2
// CHECK: gpu.return

// On tensor cores (the default for bf16, D 128, 8 heads; the MMA lines):
// each lane reads its head row's q in K's column order (4 loads), the
// first tile's K (2 tokens x 4) and V (4 tokens x 2) rows before the loop
// and the next tile's in each iteration; s = q k^T is 2 x 8 mma, the row
// max reduces over the 4 lanes of a quad, and p v is 16 mma, one per 8
// columns; the warps' states merge through shared memory.
// MMA-LABEL: gpu.func @att_bf16_attend_split(
// MMA-SAME: known_block_size = array<i32: 128, 1, 1>
// MMA-COUNT-4: vector.load %{{.+}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// MMA: scf.if
// MMA-COUNT-16: vector.load %{{.+}} {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// MMA-NOT: vector.load
// MMA: scf.for
// MMA-COUNT-16: vector.load %{{.+}} {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// MMA-NOT: vector.load
// MMA-COUNT-16: nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// MMA: gpu.shuffle xor %{{.+}}, %c1_i32
// MMA: gpu.shuffle xor %{{.+}}, %c2_i32
// MMA: math.exp2
// MMA: vector.shuffle
// MMA-COUNT-16: nvvm.mma.sync
// MMA-NOT: nvvm.mma.sync
// MMA: scf.yield
// MMA: gpu.barrier
// MMA: math.log2
// MMA: gpu.return

// CHECK-LABEL: gpu.func @att_bf16_attend_combine(
// CHECK-SAME: %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xf32>, %{{.+}}: i32)
// CHECK-SAME: known_block_size = array<i32: 512, 1, 1>
// CHECK: arith.cmpi sgt
// The online merge: 8 splits' lse and 16-byte partials loaded before any
// is used, then one weight a split, folded in by select (no NaN leak).
// CHECK: scf.for {{.+}} -> (f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-8: vector.load %{{.+}} {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: math.exp
// CHECK: math.fma
// CHECK-NEXT: arith.select
// CHECK: scf.yield
// CHECK: math.log
// CHECK: gpu.return

// OFF-NOT: _attend_

// NVVM-LABEL: llvm.func @att_bf16_attend_split(
// NVVM: nvvm.mma.sync
// NVVM-LABEL: llvm.func @att_bf16_attend_combine(
// NVVM-OFF-LABEL: llvm.func @att_bf16_attend_split(
// NVVM-OFF-NOT: nvvm.mma.sync
// NVVM-OFF-LABEL: llvm.func @att_bf16_attend_combine(

// MANIFEST: "attend": {
// MANIFEST-NEXT: "args": [
// MANIFEST-NEXT: "q",
// MANIFEST-NEXT: "k",
// MANIFEST-NEXT: "v",
// MANIFEST-NEXT: "kv_indptr",
// MANIFEST-NEXT: "kv_indices",
// MANIFEST-NEXT: "kv_last_len",
// MANIFEST-NEXT: "o",
// MANIFEST-NEXT: "lse",
// MANIFEST-NEXT: "sm_scale"
// MANIFEST: "kind": "row_splits"
// MANIFEST: "kernel": "att_bf16_attend_split"
// MANIFEST: "name": "kv_splits"
// The tensor-core split kernel: m, l and o of 4 warps x 8 heads, f32.
// MANIFEST: "shared_bytes": 16640
// MANIFEST: "kind": "rows"
// MANIFEST: "kernel": "att_bf16_attend_combine"
// MANIFEST: "name": "kv_splits"
// MANIFEST: "pdl": true
// The split partials: kAttendSplitSlots row-splits of [T x G, D] f32.
// MANIFEST: 2048,
// MANIFEST-NEXT: 8,
// MANIFEST-NEXT: 128

// -----

// fp8 k and v, D = 80 and T = 2: 8 bytes a lane, 16 lanes of which 10 hold
// columns (the padding lanes load column 0 and add nothing), and query
// token t's heads see all but the last 1 - t tokens.

//--- e4m3.mlir
!kv = !vortex.vtensor<?x32x80xf8E4M3FN, #vortex.format<paged>>
!q  = !vortex.vtensor<?x6x80xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x80xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x80xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x80xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @att_e4m3
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 80,
        group_size = 3, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = f8E4M3FN>
    fields(centroids = [1, 80])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-LABEL: gpu.func @att_e4m3_attend_split(
// CHECK-SAME: %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xf8E4M3FN>, %{{.+}}: memref<?xf8E4M3FN>
// The padding lanes' column.
// CHECK: arith.cmpi slt, %{{.+}}, %c80
// CHECK: arith.divui %{{.+}}, %c3
// CHECK-COUNT-8: vector.load %{{.+}} {alignment = 8 : i64, nontemporal = true} : memref<?xf8E4M3FN>, vector<8xf8E4M3FN>
// CHECK: scf.for
// CHECK-COUNT-8: vector.load %{{.+}} {alignment = 8 : i64, nontemporal = true} : memref<?xf8E4M3FN>, vector<8xf8E4M3FN>
// CHECK-NOT: vector.load
// CHECK: arith.extf %{{.+}} : f8E4M3FN to f32
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @att_e4m3_attend_combine(

// ELF: 177 E L F

// fp8 stays on CUDA cores.
// MMA-LABEL: gpu.func @att_e4m3_attend_split(
// MMA-NOT: nvvm.mma.sync
// MMA: gpu.return


// -----

// D 64, G 8 and T 2: 16 heads fill the mma's M side, rows g and g + 8 of
// q both load (2 vectors each), and a tile's loads are not carried across
// iterations (the registers hold the second row instead): s is 2 x 4 mma,
// p v 8.

//--- att_t2.mlir
!kv = !vortex.vtensor<?x8x64xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x16x64xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x64xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x64xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x64xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @att_t2
    config = #vortex.config<block_size = 8, page_size = 8, head_dim = 64,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 64])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// MMA-LABEL: gpu.func @att_t2_attend_split(
// MMA-COUNT-4: vector.load %{{.+}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// MMA: scf.for
// MMA-COUNT-8: vector.load %{{.+}} {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// MMA-NOT: vector.load
// MMA-COUNT-8: nvvm.mma.sync A[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}]
// MMA: math.exp2
// MMA-COUNT-8: nvvm.mma.sync
// MMA-NOT: nvvm.mma.sync
// MMA: gpu.return

// -----

// 20 query heads (G 5, T 4) outgrow the mma's M side: CUDA cores.

//--- att_h20.mlir
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x20x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @att_h20
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 5, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
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

// MMA-LABEL: gpu.func @att_h20_attend_split(
// MMA-NOT: nvvm.mma.sync
// MMA: gpu.return
