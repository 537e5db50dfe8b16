// RUN: vortex-opt %s --split-input-file --vortex-pad --vortex-mask-padding | FileCheck %s --check-prefix=MASK
// RUN: vortex-opt %s --split-input-file --vortex-pad --vortex-mask-padding --convert-vortex-to-linalg | FileCheck %s

// vortex.learned_descriptor on the cache side: for each completed block x
// [bs, d] of the pool (gathered by block id), `F[block, h m + j, i] =
// sum_e (sum_t mix[h m + j, t] x[t, e]) proj[h r + i, e]`, two
// contractions accumulating in f32 from 0: the mix over the block's tokens,
// then each landmark p against its head's rows of proj, (p floordiv m) r +
// i. Over the real extents only (vortex-mask-padding leaves the op); the
// rows are scattered into the field by block id and written back once.

// H = 2, m = 2, r = 4, blocks [4, 8] (test/Dialect/learned.mlir).
!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
!s4 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @ld
    config = #vortex.config<block_size = 4, page_size = 4, head_dim = 8,
        group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0,
        reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
    fields(g = [4, 4]) params(mix = [4, 4], proj = [8, 8])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64}
      : !kv, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  %a = vortex.max %g {dim = 2 : i64} : !g -> !s4
  %s = vortex.max %a {dim = 1 : i64} : !s4 -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-DAG: #[[$ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$BLK:.+]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-DAG: #[[$P0:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d3)>
// CHECK-DAG: #[[$XT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$MIXED:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$PROJ:.+]] = affine_map<(d0, d1, d2, d3) -> (0, (d1 floordiv 2) * 4 + d2, d3)>
// CHECK-LABEL: func.func @ld_cache(
// CHECK-SAME: %[[KA:[^:]+]]: memref<?x4x8xf32> {vortex.name = "k"}
// CHECK-SAME: %[[GA:[^:]+]]: memref<?x4x4xf32> {vortex.name = "g"}
// CHECK-SAME: %[[MA:[^:]+]]: memref<1x4x4xf32> {vortex.name = "mix"}
// CHECK-SAME: %[[PA:[^:]+]]: memref<1x8x8xf32> {vortex.name = "proj"}
// CHECK-SAME: %[[IA:[^:]+]]: memref<?xi32> {vortex.name = "block_ids"})
// CHECK-DAG: %[[IDS:.+]] = bufferization.to_tensor %[[IA]] restrict
// CHECK-DAG: %[[K:.+]] = bufferization.to_tensor %[[KA]] restrict : memref<?x4x8xf32>
// CHECK-DAG: %[[G:.+]] = bufferization.to_tensor %[[GA]] restrict writable : memref<?x4x4xf32>
// CHECK-DAG: %[[MIX:.+]] = bufferization.to_tensor %[[MA]] restrict : memref<1x4x4xf32>
// CHECK-DAG: %[[PROJT:.+]] = bufferization.to_tensor %[[PA]] restrict : memref<1x8x8xf32>
// The completed blocks, gathered by id.
// CHECK: %[[X:.+]] = linalg.generic {indexing_maps = [#[[$BLK]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[IDS]] : tensor<?xi32>) outs(%{{.+}} : tensor<?x4x8xf32>)
// CHECK: tensor.extract %[[K]]
// mixed[s, p, e] = sum_t mix[0, p, t] x[s, t, e], from 0.
// CHECK: %[[Z1:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x4x8xf32>)
// CHECK-NEXT: %[[MX:.+]] = linalg.generic {indexing_maps = [#[[$P0]], #[[$XT]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[MIX]], %[[X]] : tensor<1x4x4xf32>, tensor<?x4x8xf32>) outs(%[[Z1]] : tensor<?x4x8xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: arith.addf %[[ACC]], %[[M]] : f32
// rows[s, p, i] = sum_e mixed[s, p, e] proj[0, (p floordiv m) r + i, e].
// CHECK: %[[Z2:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x4x4xf32>)
// CHECK-NEXT: %[[D:.+]] = linalg.generic {indexing_maps = [#[[$MIXED]], #[[$PROJ]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[MX]], %[[PROJT]] : tensor<?x4x8xf32>, tensor<1x8x8xf32>) outs(%[[Z2]] : tensor<?x4x4xf32>)
// Scattered into the field by block id, written back once.
// CHECK: %[[NEW:.+]] = scf.for %[[S:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[F:.+]] = %[[G]]) -> (tensor<?x4x4xf32>)
// CHECK: %[[ROW:.+]] = tensor.extract_slice %[[D]][%[[S]], 0, 0] [1, 4, 4] [1, 1, 1]
// CHECK: tensor.insert_slice %[[ROW]] into %[[F]]
// CHECK: bufferization.materialize_in_destination %[[NEW]] in restrict writable %[[GA]]
// CHECK-NOT: materialize_in_destination
// CHECK: return

// -----

// H = 2, m = 3, r = 3: the field [6, 3] is padded to [8, 4] in the types,
// not in memory; the rows are computed at [6, 3] (landmark p of head
// p floordiv 3) and scattered at the field's stored [6, 3].
!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x6x3xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x6x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x6x8xbf16, #vortex.format<parameter>>
!s6 = !vortex.vtensor<?x6x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @ld_padded
    config = #vortex.config<block_size = 4, page_size = 4, head_dim = 8,
        group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0,
        reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
    fields(g = [6, 3]) params(mix = [6, 4], proj = [6, 8])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64}
      : !kv, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  %a = vortex.max %g {dim = 2 : i64} : !g -> !s6
  %s = vortex.max %a {dim = 1 : i64} : !s6 -> !s
  vortex.topk %s into %o : !s into !o
}

// The op reads its operands unmasked (padded lanes never enter the sums).
// MASK-LABEL: vortex.flow @ld_padded
// MASK: cache(
// MASK-NEXT: vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64} : <?x4x8xbf16, #vortex.format<paged>>, <1x6x4xbf16, #vortex.format<parameter>, padded = [8, 4]>, <1x6x8xbf16, #vortex.format<parameter>, padded = [8, 8]> into <?x6x3xbf16, #vortex.format<paged>, padded = [8, 4]>

// CHECK-DAG: #[[$P0:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d3)>
// CHECK-DAG: #[[$XT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$MIXED:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$PROJ:.+]] = affine_map<(d0, d1, d2, d3) -> (0, (d1 floordiv 3) * 3 + d2, d3)>
// CHECK-LABEL: func.func @ld_padded_cache(
// CHECK-SAME: %[[GA:[^:]+]]: memref<?x6x3xf32> {vortex.name = "g"}
// CHECK-SAME: %[[MA:[^:]+]]: memref<1x6x4xf32> {vortex.name = "mix"}
// CHECK-SAME: %[[PA:[^:]+]]: memref<1x6x8xf32> {vortex.name = "proj"}
// CHECK-DAG: %[[MIX:.+]] = bufferization.to_tensor %[[MA]] restrict : memref<1x6x4xf32>
// CHECK-DAG: %[[PROJT:.+]] = bufferization.to_tensor %[[PA]] restrict : memref<1x6x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$P0]], #[[$XT]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[MIX]], %{{.+}} : tensor<1x6x4xf32>, tensor<?x4x8xf32>) outs(%{{.+}} : tensor<?x6x8xf32>)
// CHECK: %[[D:.+]] = linalg.generic {indexing_maps = [#[[$MIXED]], #[[$PROJ]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}}, %[[PROJT]] : tensor<?x6x8xf32>, tensor<1x6x8xf32>) outs(%{{.+}} : tensor<?x6x3xf32>)
// CHECK: scf.for
// CHECK: tensor.extract_slice %[[D]][%{{.+}}, 0, 0] [1, 6, 3] [1, 1, 1] : tensor<?x6x3xf32> to tensor<1x6x3xf32>
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[GA]]
// CHECK: return

// -----

// A streamed proj (GLM's MLA shape: H = 20, m = 1, r = 16 over the latent
// of 576, proj [320, 576]: padded 2^19 elements, over the tile bound): the
// contraction reads proj where it is bound, [1, 320, 576], and the blocks
// at their real [32, 576], never a padded copy.
!kv = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x20x16xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x20x32xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x320x576xbf16, #vortex.format<parameter>>
!s20 = !vortex.vtensor<?x20x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @ld_streamed
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(g = [20, 16]) params(mix = [20, 32], proj = [320, 576])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 20 : i64}
      : !kv, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  %a = vortex.max %g {dim = 2 : i64} : !g -> !s20
  %s = vortex.max %a {dim = 1 : i64} : !s20 -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-DAG: #[[$BLK:.+]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-DAG: #[[$PROJ:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1 * 16 + d2, d3)>
// CHECK-LABEL: func.func @ld_streamed_cache(
// CHECK-SAME: %[[KA:[^:]+]]: memref<?x32x576xf32> {vortex.name = "k"}
// CHECK-SAME: %[[PA:[^:]+]]: memref<1x320x576xf32> {vortex.name = "proj"}
// CHECK-DAG: %[[K:.+]] = bufferization.to_tensor %[[KA]] restrict : memref<?x32x576xf32>
// CHECK-DAG: %[[PROJT:.+]] = bufferization.to_tensor %[[PA]] restrict : memref<1x320x576xf32>
// CHECK: %[[X:.+]] = linalg.generic {indexing_maps = [#[[$BLK]], #{{.+}}], {{.*}} outs(%{{.+}} : tensor<?x32x576xf32>)
// CHECK: tensor.extract %[[K]]
// CHECK: %[[MX:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[X]] : tensor<1x20x32xf32>, tensor<?x32x576xf32>) outs(%{{.+}} : tensor<?x20x576xf32>)
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[$PROJ]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[MX]], %[[PROJT]] : tensor<?x20x576xf32>, tensor<1x320x576xf32>) outs(%{{.+}} : tensor<?x20x16xf32>)
// CHECK: return
