// RUN: vortex-opt %s --split-input-file --vortex-pad --vortex-mask-padding | FileCheck %s --check-prefix=MASK
// RUN: vortex-opt %s --split-input-file --vortex-pad --vortex-mask-padding --convert-vortex-to-linalg | FileCheck %s

// A grouped GeMM (`groups = G`, a parameter weight y [1, Ny, K], batched x
// [B, Nx, K]): `O[s, g Ny/G + a, b] = sum_k Y[g Ny/G + a, k] X[s, g Nx/G +
// b, k]`, result [B, Ny, Nx/G]. It reads its weight as the streamed GeMM
// does (GeMMOp::readsStreamedWeight): vortex-mask-padding leaves it, the
// contraction runs over the real extents only, reading y at its one row
// and x's rows of the output row's group; the padded lanes of the result
// are 0.

// G = 2, Ny = 8, Nx / G = 1 (test/Dialect/learned.mlir's query side): x's
// row is (a floordiv 4) * 1 + c.
!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
!u1 = !vortex.vtensor<?x8x1xbf16, #vortex.format<batched>>
!u  = !vortex.vtensor<?x2x4xbf16, #vortex.format<batched>>
!sp = !vortex.vtensor<?x4x2xbf16, #vortex.format<ragged>>
!s1 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @g2
    config = #vortex.config<block_size = 4, page_size = 4, head_dim = 8,
        group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0,
        reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
    fields(g = [4, 4]) params(qproj = [8, 8])
cache(%k: !kv, %v: !kv, %g: !g, %qproj: !pj) {
  vortex.fill %g : !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %qproj: !pj) {
  %u1 = vortex.gemm %q, %qproj {groups = 2 : i64} : (!q, !pj) -> !u1
  %u = vortex.reshape %u1 : !u1 -> !u
  %sp = vortex.gemm %u, %g : (!u, !g) -> !sp
  %s1 = vortex.max %sp {dim = 2 : i64} : !sp -> !s1
  %s = vortex.max %s1 {dim = 1 : i64} : !s1 -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-DAG: #[[$X2:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 4 + d2, d3)>
// CHECK-DAG: #[[$Y:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d3)>
// CHECK-DAG: #[[$O:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @g2_indexer(
// CHECK-SAME: %[[QA:[^:]+]]: memref<?x2x8xf32> {vortex.name = "q"}
// CHECK-SAME: %[[WA:[^:]+]]: memref<1x8x8xf32> {vortex.name = "qproj"}
// CHECK-DAG: %[[Q:.+]] = bufferization.to_tensor %[[QA]] restrict : memref<?x2x8xf32> to tensor<?x2x8xf32>
// CHECK-DAG: %[[W:.+]] = bufferization.to_tensor %[[WA]] restrict : memref<1x8x8xf32> to tensor<1x8x8xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x8x1xf32>)
// CHECK-NEXT: linalg.generic {indexing_maps = [#[[$X2]], #[[$Y]], #[[$O]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %[[W]] : tensor<?x2x8xf32>, tensor<1x8x8xf32>) outs(%[[Z]] : tensor<?x8x1xf32>)
// CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %[[YV:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[X]], %[[YV]] : f32
// CHECK-NEXT: arith.addf %[[ACC]], %[[P]] : f32
// CHECK: return

// -----

// G = 2 over q [?, 6, 8] and y [1, 6, 8]: the result [?, 6, 3] is padded
// to [8, 4] (Ny = 6, Nx / G = 3); the group arithmetic uses the real
// extents (x's row (a floordiv 3) * 3 + c), the contraction runs over
// [?, 6, 3] and the padded lanes are 0.
!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x6x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x3x3xbf16, #vortex.format<paged>>
!qp = !vortex.vtensor<1x6x8xbf16, #vortex.format<parameter>>
!u  = !vortex.vtensor<?x6x3xbf16, #vortex.format<batched>>
!sp = !vortex.vtensor<?x3x6xbf16, #vortex.format<ragged>>
!s1 = !vortex.vtensor<?x3x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @g2_padded
    config = #vortex.config<block_size = 4, page_size = 4, head_dim = 8,
        group_size = 6, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0,
        reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
    fields(g = [3, 3]) params(qproj = [6, 8])
cache(%k: !kv, %v: !kv, %g: !g, %qproj: !qp) {
  vortex.fill %g : !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %qproj: !qp) {
  %u = vortex.gemm %q, %qproj {groups = 2 : i64} : (!q, !qp) -> !u
  %sp = vortex.gemm %u, %g : (!u, !g) -> !sp
  %s1 = vortex.max %sp {dim = 2 : i64} : !sp -> !s1
  %s = vortex.max %s1 {dim = 1 : i64} : !s1 -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-DAG: #[[$X3:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 3) * 3 + d2, d3)>
// CHECK-DAG: #[[$Y:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d3)>
// CHECK-DAG: #[[$O:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @g2_padded_indexer(
// CHECK-SAME: %[[QA:[^:]+]]: memref<?x6x8xf32> {vortex.name = "q"}
// CHECK-SAME: %[[WA:[^:]+]]: memref<1x6x8xf32> {vortex.name = "qproj"}
// No mask before the grouped GeMM: it reads the unpadded q and weight.
// CHECK-DAG: %[[Q:.+]] = bufferization.to_tensor %[[QA]] restrict : memref<?x6x8xf32> to tensor<?x6x8xf32>
// CHECK-DAG: %[[W:.+]] = bufferization.to_tensor %[[WA]] restrict : memref<1x6x8xf32> to tensor<1x6x8xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x6x3xf32>)
// CHECK-NEXT: %[[R:.+]] = linalg.generic {indexing_maps = [#[[$X3]], #[[$Y]], #[[$O]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %[[W]] : tensor<?x6x8xf32>, tensor<1x6x8xf32>) outs(%[[Z]] : tensor<?x6x3xf32>)
// Then widened to the padded [8, 4], 0 beyond [6, 3].
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x8x4xf32>)
// CHECK-DAG: arith.cmpi slt, %{{.+}}, %c6
// CHECK-DAG: arith.cmpi slt, %{{.+}}, %c3
// CHECK: tensor.extract %[[R]]
// CHECK: arith.select %{{.+}}, %{{.+}}, %cst{{.*}} : f32
// CHECK: return

// -----

// A grouped GeMM whose weight is also streamed (G = 20 heads of an MLA
// query [?, 20, 576], y [1, 320, 576]: padded 2^19 elements, over the tile
// bound): the contraction reads the weight where it is bound, [1, 320,
// 576], never a padded copy, and the result [?, 320, 1] is widened to
// [?, 512, 1].
!kv = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x20x16xbf16, #vortex.format<paged>>
!pj = !vortex.vtensor<1x320x576xbf16, #vortex.format<parameter>>
!u1 = !vortex.vtensor<?x320x1xbf16, #vortex.format<batched>>
!u  = !vortex.vtensor<?x20x16xbf16, #vortex.format<batched>>
!sp = !vortex.vtensor<?x20x20xbf16, #vortex.format<ragged>>
!s1 = !vortex.vtensor<?x20x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @g20_streamed
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(g = [20, 16]) params(qproj = [320, 576])
cache(%k: !kv, %v: !kv, %g: !g, %qproj: !pj) {
  vortex.fill %g : !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %qproj: !pj) {
  %u1 = vortex.gemm %q, %qproj {groups = 20 : i64} : (!q, !pj) -> !u1
  %u = vortex.reshape %u1 : !u1 -> !u
  %sp = vortex.gemm %u, %g : (!u, !g) -> !sp
  %s1 = vortex.max %sp {dim = 2 : i64} : !sp -> !s1
  %s = vortex.max %s1 {dim = 1 : i64} : !s1 -> !s
  vortex.topk %s into %o : !s into !o
}

// q's 576 channels are padded to 1024, but the grouped GeMM reads it
// unmasked: its contraction stops at 576.
// MASK-LABEL: vortex.flow @g20_streamed
// MASK: indexer(
// MASK-NEXT: vortex.gemm %q, %qproj {groups = 20 : i64} : (!vortex.vtensor<?x20x576xbf16, #vortex.format<batched>, padded = [32, 1024]>

// CHECK-DAG: #[[$X16:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 16 + d2, d3)>
// CHECK-DAG: #[[$Y:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d3)>
// CHECK-LABEL: func.func @g20_streamed_indexer(
// CHECK-SAME: %[[QA:[^:]+]]: memref<?x20x576xf32> {vortex.name = "q"}
// CHECK-SAME: %[[WA:[^:]+]]: memref<1x320x576xf32> {vortex.name = "qproj"}
// CHECK-DAG: %[[Q:.+]] = bufferization.to_tensor %[[QA]] restrict : memref<?x20x576xf32> to tensor<?x20x576xf32>
// CHECK-DAG: %[[W:.+]] = bufferization.to_tensor %[[WA]] restrict : memref<1x320x576xf32> to tensor<1x320x576xf32>
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[$X16]], #[[$Y]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %[[W]] : tensor<?x20x576xf32>, tensor<1x320x576xf32>) outs(%{{.+}} : tensor<?x320x1xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x512x1xf32>)
// CHECK: tensor.extract %[[R]]
// CHECK: return

// -----

// An ungrouped streamed GeMM (examples/learned/learned_block_sparse_mla.mlir's
// W [576, 11520], here [300, 576]): the same path with G = 1, x's row c;
// the result [?, 300, 1] is widened to [?, 512, 1], 0 beyond row 300.
!kv = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x300xbf16, #vortex.format<paged>>
!w  = !vortex.vtensor<1x300x576xbf16, #vortex.format<parameter>>
!qm = !vortex.vtensor<?x1x576xbf16, #vortex.format<batched>>
!vt = !vortex.vtensor<?x300x1xbf16, #vortex.format<batched>>
!vq = !vortex.vtensor<?x1x300xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @streamed
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(c = [1, 300]) params(W = [300, 576])
cache(%k: !kv, %v: !kv, %c: !c, %W: !w) {
  vortex.fill %c : !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !c, %W: !w) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %vt = vortex.gemm %qm, %W : (!qm, !w) -> !vt
  %vq = vortex.reshape %vt : !vt -> !vq
  %s = vortex.gemm %vq, %c : (!vq, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-DAG: #[[$X1:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$Y:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d3)>
// CHECK-LABEL: func.func @streamed_indexer(
// CHECK-SAME: %[[WA:[^:]+]]: memref<1x300x576xf32> {vortex.name = "W"}
// CHECK: %[[W:.+]] = bufferization.to_tensor %[[WA]] restrict : memref<1x300x576xf32> to tensor<1x300x576xf32>
// The mean over the padded heads is [?, 1, 1024]: its real 576 lanes.
// CHECK: %[[QM:.+]] = tensor.extract_slice %{{.+}}[0, 0, 0] [%{{.+}}, 1, 576] [1, 1, 1] : tensor<?x1x1024xf32> to tensor<?x1x576xf32>
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[$X1]], #[[$Y]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[QM]], %[[W]] : tensor<?x1x576xf32>, tensor<1x300x576xf32>) outs(%{{.+}} : tensor<?x300x1xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x512x1xf32>)
// CHECK: arith.cmpi slt, %{{.+}}, %c300
// CHECK: tensor.extract %[[R]]
// CHECK: return
