// RUN: vortex-opt %s --split-input-file --vortex-pad | FileCheck %s --check-prefix=PAD
// RUN: vortex-opt %s --split-input-file --vortex-pad --vortex-mask-padding | FileCheck %s --check-prefix=MASK
// RUN: vortex-opt %s --split-input-file --vortex-pad --vortex-mask-padding --convert-vortex-to-linalg | FileCheck %s --check-prefix=LIN

// G = 5 (Qwen3-14B): the query and everything derived from its head axis
// are padded to 8 lanes; the reductions over the padded head axis get the
// neutral element of the reduction in the padded lanes.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!e = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!sh = !vortex.vtensor<?x5x128xbf16, #vortex.format<ragged>>
!sd = !vortex.vtensor<?x5x1xbf16, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @g5
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 5, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !e, %min: !e) {
  %hi = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %hi into %max : !er into !e
  %lo = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %lo into %min : !er into !e
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !e, %min: !e) {
  %a0 = vortex.multiply %q, %max : (!q, !e) -> !sh
  %a1 = vortex.multiply %q, %min : (!q, !e) -> !sh
  %a = vortex.maximum %a0, %a1 : (!sh, !sh) -> !sh
  %sum = vortex.sum %a {dim = 2 : i64} : !sh -> !sd
  %hmax = vortex.max %sum {dim = 1 : i64} : !sd -> !s
  %hmin = vortex.min %sum {dim = 1 : i64} : !sd -> !s
  %hmean = vortex.mean %sum {dim = 1 : i64} : !sd -> !s
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %t = vortex.add %hmax, %hmin : (!s, !s) -> !s
  %u = vortex.add %t, %hmean : (!s, !s) -> !s
  vortex.topk %u into %o : !s into !o
}

// PAD-LABEL: vortex.flow @g5
// Power-of-two shapes are untouched.
// PAD: cache(%k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
// PAD: indexer(%q: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>
// PAD: vortex.multiply {{.*}} -> !vortex.vtensor<?x5x128xbf16, #vortex.format<ragged>, padded = [8, 128]>
// PAD: vortex.sum {{.*}} -> <?x5x1xbf16, #vortex.format<ragged>, padded = [8, 1]>
// PAD: vortex.max {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// PAD-NOT: mask_lanes

// MASK-LABEL: vortex.flow @g5
// The sum over D (not padded) needs no mask.
// MASK: %[[A:.+]] = vortex.maximum
// MASK-NEXT: %[[SUM:.+]] = vortex.sum %[[A]]
// Max over the padded head axis: padded lanes hold -inf.
// MASK-NEXT: %[[M1:.+]] = vortex.mask_lanes %[[SUM]] {value = 0xFF800000 : f32}
// MASK-NEXT: vortex.max %[[M1]] {dim = 1 : i64}
// Min: +inf.
// MASK-NEXT: %[[M2:.+]] = vortex.mask_lanes %[[SUM]] {value = 0x7F800000 : f32}
// MASK-NEXT: vortex.min %[[M2]] {dim = 1 : i64}
// Mean: 0 (and the division is by the 5 real heads, see LIN).
// MASK-NEXT: %[[M3:.+]] = vortex.mask_lanes %[[SUM]] {value = 0.000000e+00 : f32}
// MASK-NEXT: vortex.mean %[[M3]] {dim = 1 : i64}
// MASK-NEXT: %[[M4:.+]] = vortex.mask_lanes %q {value = 0.000000e+00 : f32}
// MASK-NEXT: vortex.mean %[[M4]] {dim = 1 : i64}

// LIN-LABEL: func.func @g5_indexer
// The real q is [?, 5, 128]; it is read into 8 lanes, padded lanes 0.
// LIN-SAME: memref<?x5x128xf32> {vortex.name = "q"}
// LIN: tensor<?x8x128xf32>
// LIN: arith.cmpi slt, %{{.+}}, %c5
// LIN: arith.select
// The lane masks compare against the real extent 5.
// LIN: arith.constant 0xFF800000 : f32
// LIN: arith.cmpi slt, %{{.+}}, %c5
// Means divide by the real 5 heads, never by 8.
// LIN: arith.constant 5.000000e+00 : f32
// LIN-NOT: arith.constant 8.000000e+00 : f32
// LIN: func.func @g5_cache

// -----

// A contraction over a padded K axis masks both operands with 0.

!kv = !vortex.vtensor<?x16x96xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x96xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x96xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x96xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x96xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @d96
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 96,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 96])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// PAD-LABEL: vortex.flow @d96
// PAD: %centroids: !vortex.vtensor<?x1x96xbf16, #vortex.format<paged>, padded = [1, 128]>

// MASK-LABEL: vortex.flow @d96
// The mean over the 16 tokens of a block does not touch the padded D lanes.
// MASK: cache(
// MASK-NOT: mask_lanes
// MASK: indexer(
// MASK: %[[QM:.+]] = vortex.mean %q
// MASK-NEXT: %[[X:.+]] = vortex.mask_lanes %[[QM]] {value = 0.000000e+00 : f32}
// MASK-NEXT: %[[Y:.+]] = vortex.mask_lanes %centroids {value = 0.000000e+00 : f32}
// MASK-NEXT: vortex.gemm %[[X]], %[[Y]]

// LIN-LABEL: func.func @d96_indexer
// LIN-SAME: memref<?x1x96xf32> {vortex.name = "centroids"}
// The contraction runs over the 128 padded lanes.
// LIN: tensor.expand_shape {{.*}} into tensor<?x1x8x128xf32>
// LIN: ins(%{{.+}}, %{{.+}} : tensor<?x1x128xf32>, tensor<?x1x128xf32>) outs(%{{.+}} : tensor<?x1x1xf32>)
// LIN-LABEL: func.func @d96_cache
// Stores write the 96 real lanes of the field rows.
// LIN: tensor.extract_slice {{.*}} : tensor<?x1x128xf32> to tensor<1x1x96xf32>
// LIN: tensor.insert_slice {{.*}} : tensor<1x1x96xf32> into tensor<?x1x96xf32>

// -----

// Parameters are padded like any other tensor (their type in both bodies),
// and a parameter read by a reduction or a contraction over a padded axis is
// masked like any operand: the mask of a parameter is a parameter.

!kv = !vortex.vtensor<?x16x96xbf16, #vortex.format<paged>>
!kr = !vortex.vtensor<?x16x96xbf16, #vortex.format<ragged>>
!c = !vortex.vtensor<?x1x96xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x96xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x96xbf16, #vortex.format<batched>>
!w = !vortex.vtensor<1x3x96xbf16, #vortex.format<parameter>>
!sc = !vortex.vtensor<1x1x96xbf16, #vortex.format<parameter>>
!b = !vortex.vtensor<1x5x1xbf16, #vortex.format<parameter>>
!s3 = !vortex.vtensor<?x1x3xbf16, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @params
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 96,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 96]) params(w = [3, 96], scale = [1, 96], b = [5, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %w: !w, %scale: !sc, %b: !b) {
  %ks = vortex.multiply %k, %scale : (!kv, !sc) -> !kr
  %m = vortex.mean %ks {dim = 1 : i64} : !kr -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %w: !w, %scale: !sc, %b: !b) {
  %g = vortex.gemm %w, %centroids : (!w, !c) -> !s3
  %gm = vortex.max %g {dim = 2 : i64} : !s3 -> !s
  %bm = vortex.max %b {dim = 1 : i64} : !b -> !s
  %t = vortex.add %gm, %bm : (!s, !s) -> !s
  vortex.topk %t into %o : !s into !o
}

// PAD-LABEL: vortex.flow @params
// PAD-SAME: params(w = [3, 96], scale = [1, 96], b = [5, 1])
// PAD: cache({{.*}}, %w: !vortex.vtensor<1x3x96xbf16, #vortex.format<parameter>, padded = [4, 128]>, %scale: !vortex.vtensor<1x1x96xbf16, #vortex.format<parameter>, padded = [1, 128]>, %b: !vortex.vtensor<1x5x1xbf16, #vortex.format<parameter>, padded = [8, 1]>)
// PAD: indexer({{.*}}, %w: !vortex.vtensor<1x3x96xbf16, #vortex.format<parameter>, padded = [4, 128]>, %scale: !vortex.vtensor<1x1x96xbf16, #vortex.format<parameter>, padded = [1, 128]>, %b: !vortex.vtensor<1x5x1xbf16, #vortex.format<parameter>, padded = [8, 1]>)
// PAD: vortex.gemm %w, %centroids {{.*}} -> !vortex.vtensor<?x1x3xbf16, #vortex.format<ragged>, padded = [1, 4]>
// PAD-NOT: mask_lanes

// MASK-LABEL: vortex.flow @params
// MASK: cache(
// MASK-NOT: mask_lanes
// MASK: indexer(
// MASK-NEXT: %[[W:.+]] = vortex.mask_lanes %w {value = 0.000000e+00 : f32} : <1x3x96xbf16, #vortex.format<parameter>, padded = [4, 128]> -> <1x3x96xbf16, #vortex.format<parameter>, padded = [4, 128]>
// MASK-NEXT: %[[C:.+]] = vortex.mask_lanes %centroids {value = 0.000000e+00 : f32}
// MASK-NEXT: %[[G:.+]] = vortex.gemm %[[W]], %[[C]]
// MASK-NEXT: %[[GM:.+]] = vortex.mask_lanes %[[G]] {value = 0xFF800000 : f32}
// MASK-NEXT: vortex.max %[[GM]] {dim = 2 : i64}
// MASK-NEXT: %[[B:.+]] = vortex.mask_lanes %b {value = 0xFF800000 : f32} : <1x5x1xbf16, #vortex.format<parameter>, padded = [8, 1]> -> <1x5x1xbf16, #vortex.format<parameter>, padded = [8, 1]>
// MASK-NEXT: vortex.max %[[B]] {dim = 1 : i64} : <1x5x1xbf16, #vortex.format<parameter>, padded = [8, 1]> -> <?x1x1xbf16, #vortex.format<ragged>>

// LIN-LABEL: func.func @params_indexer
// LIN-SAME: %[[W:[^:]+]]: memref<1x3x96xf32> {vortex.name = "w"}, %{{[^:]+}}: memref<1x1x96xf32> {vortex.name = "scale"}, %[[B:[^:]+]]: memref<1x5x1xf32> {vortex.name = "b"}, %{{[^:]+}}: memref<?xi32> {vortex.name = "dense_kv_indptr"}
// LIN-DAG: %[[WT:.+]] = bufferization.to_tensor %[[W]] restrict : memref<1x3x96xf32> to tensor<1x3x96xf32>
// LIN-DAG: %[[BT:.+]] = bufferization.to_tensor %[[B]] restrict : memref<1x5x1xf32> to tensor<1x5x1xf32>
// (Binding w pads it once at the top; that copy is dead, since reads go to
// the memref, masked, and canonicalization drops it.)
// The mask of w keeps w's one row (the padded copy of the memref, then the
// mask); the contraction reads it at row 0 for every position.
// LIN: %[[WD:.+]] = tensor.dim %[[WT]], %{{.+}} : tensor<1x3x96xf32>
// LIN: %[[WP:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<?x4x128xf32>)
// LIN: tensor.extract %[[WT]][%{{.+}}, %{{.+}}, %{{.+}}] : tensor<1x3x96xf32>
// LIN: %[[WM:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<?x4x128xf32>)
// LIN: tensor.extract %[[WP]][%{{.+}}, %{{.+}}, %{{.+}}] : tensor<?x4x128xf32>
// LIN: %[[WMC:.+]] = tensor.cast %[[WM]] : tensor<?x4x128xf32> to tensor<1x4x128xf32>
// LIN: %[[WB:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<?x4x128xf32>)
// LIN: tensor.extract %[[WMC]][%c0{{(_[0-9]+)?}}, %{{.+}}, %{{.+}}] : tensor<1x4x128xf32>
// LIN: linalg.generic {{.*}} ins(%[[WB]], %{{.+}} : tensor<?x4x128xf32>, tensor<?x1x128xf32>) outs(%{{.+}} : tensor<?x1x4xf32>)
// b: padded, masked with -inf, read at row 0 by the reduction's operand.
// LIN: tensor.extract %[[BT]][%{{.+}}, %{{.+}}, %{{.+}}] : tensor<1x5x1xf32>
// LIN: arith.constant 0xFF800000 : f32
// LIN: tensor.extract %{{.+}}[%c0{{(_[0-9]+)?}}, %{{.+}}, %{{.+}}] : tensor<1x8x1xf32>
// LIN-LABEL: func.func @params_cache
// LIN-SAME: memref<1x1x96xf32> {vortex.name = "scale"}
// LIN-SAME: memref<?xi32> {vortex.name = "block_ids"}

// -----

// k and v in f32, intermediates in bf16, G = 5 and D = 80: the mask on q
// keeps q's f32 (mask_lanes keeps its input's type), and the flow still
// verifies and lowers.

!kv32 = !vortex.vtensor<?x16x80xf32, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x80xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x80xbf16, #vortex.format<ragged>>
!q32 = !vortex.vtensor<?x5x80xf32, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x80xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @mixed_dtypes
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 80,
        group_size = 5, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = f32>
    fields(centroids = [1, 80])
cache(%k: !kv32, %v: !kv32, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv32 -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q32, %o: !o, %k: !kv32, %v: !kv32, %centroids: !c) {
  %mean = vortex.mean %q {dim = 1 : i64} : !q32 -> !qm
  %s = vortex.gemm %mean, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}
// MASK-LABEL: vortex.flow @mixed_dtypes
// MASK: indexer(
// MASK: vortex.mask_lanes %{{.*}} {value = 0.000000e+00 : f32} : <?x5x80xf32, #vortex.format<batched>, padded = [8, 128]> -> <?x5x80xf32, #vortex.format<batched>, padded = [8, 128]>
// MASK: vortex.mean
// LIN-LABEL: func.func @mixed_dtypes_indexer

// -----

// A streamed parameter (over the tile bound, [96, 2304] -> [128, 4096]
// padded) is padded like any value, but neither operand of its GeMM is
// masked: both back ends contract over the real extents only (on the CPU
// the linalg.generic reads a slice of x and the weight's one row as bound,
// [1, 96, 2304], and its result [?, 96, 1] is widened to the padded
// [?, 128, 1], padded lanes 0).

!kv = !vortex.vtensor<?x16x96xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x96xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x96xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x24x96xbf16, #vortex.format<batched>>
!qf = !vortex.vtensor<?x1x2304xbf16, #vortex.format<batched>>
!w = !vortex.vtensor<1x96x2304xbf16, #vortex.format<parameter>>
!vt = !vortex.vtensor<?x96x1xbf16, #vortex.format<batched>>
!vq = !vortex.vtensor<?x1x96xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @streamed
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 96,
        group_size = 24, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 96]) params(W = [96, 2304])
cache(%k: !kv, %v: !kv, %centroids: !c, %W: !w) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %W: !w) {
  %qf = vortex.reshape %q : !q -> !qf
  %vt = vortex.gemm %qf, %W : (!qf, !w) -> !vt
  %vq = vortex.reshape %vt : !vt -> !vq
  %s = vortex.gemm %vq, %centroids : (!vq, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// PAD-LABEL: vortex.flow @streamed
// PAD:         %W: !vortex.vtensor<1x96x2304xbf16, #vortex.format<parameter>, padded = [128, 4096]>
// MASK-LABEL: vortex.flow @streamed
// MASK:         %[[QF:.+]] = vortex.reshape %q
// MASK-NEXT:    vortex.gemm %[[QF]], %W :
// The weight is read as its one row (a map to row 0), not spread over the
// rows of the step.
// LIN: #{{.+}} = affine_map<(d0, d1, d2, d3) -> (0, d1, d3)>
// LIN-LABEL: func.func @streamed_indexer
// LIN:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// LIN-SAME:      ins({{.*}} : tensor<?x1x2304xf32>, tensor<1x96x2304xf32>) outs({{.*}} : tensor<?x96x1xf32>)
// LIN:         linalg.generic {{.*}} outs({{.*}} : tensor<?x128x1xf32>)
