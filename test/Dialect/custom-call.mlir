// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// vortex.custom_call: a registered torch function as an indexer op
// (docs/python.md, "Custom ops"). Ragged and batched operands, the
// result's declared type kept through a round trip.

!p = !vortex.vtensor<?x1x8xf32, #vortex.format<paged>>
!k = !vortex.vtensor<?x4x8xf32, #vortex.format<paged>>
!q = !vortex.vtensor<?x2x8xf32, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x8xf32, #vortex.format<batched>>
!r = !vortex.vtensor<?x1x8xf32, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

// CHECK-LABEL: vortex.flow @custom
// CHECK:       indexer(
// CHECK:         %[[QM:.+]] = vortex.custom_call "QueryMix"(%q) : (!vortex.vtensor<?x2x8xf32, #vortex.format<batched>>) -> !vortex.vtensor<?x1x8xf32, #vortex.format<batched>>
// CHECK:         %[[S:.+]] = vortex.gemm %[[QM]], %c
// CHECK:         %[[N:.+]] = vortex.custom_call "score.norm"(%[[S]], %[[QM]]) {note = "kept"} : (!vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>, !vortex.vtensor<?x1x8xf32, #vortex.format<batched>>) -> !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
// CHECK:         vortex.topk %[[N]] into %o
vortex.flow @custom config = #cfg fields(c = [1, 8])
cache(%k: !k, %v: !k, %c: !p) {
  %m = vortex.mean %k {dim = 1 : i64} : !k -> !r
  vortex.write %m into %c : !r into !p
}
indexer(%q: !q, %o: !o, %k: !k, %v: !k, %c: !p) {
  %qm = vortex.custom_call "QueryMix"(%q) : (!q) -> !qm
  %s = vortex.gemm %qm, %c : (!qm, !p) -> !s
  %n = vortex.custom_call "score.norm"(%s, %qm) {note = "kept"} : (!s, !qm) -> !s
  vortex.topk %n into %o : !s into !o
}
