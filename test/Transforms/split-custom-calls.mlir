// RUN: vortex-opt %s --vortex-split-custom-calls | FileCheck %s
// RUN: vortex-opt %s --vortex-split-custom-calls -o %t.mlir
// RUN: vortex-compile %t.mlir --target=cpu --flow=f_stage1 -o %t.s1
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.s1/f_stage1.manifest.json
// RUN: vortex-opt %t.mlir --vortex-to-cpu | FileCheck %s --check-prefix=CPU
//
// vortex-split-custom-calls: one flow with two custom calls becomes three
// stage flows. Stage 0 exports call 0's operand once (c0_in0), which
// stage 1 reads too; stage 1 imports it and call 0's result and exports
// call 1's operands; stage 2 imports call 1's result and selects.

!k = !vortex.vtensor<?x4x8xf32, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x8xf32, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x8xf32, #vortex.format<ragged>>
!q = !vortex.vtensor<?x2x8xf32, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x8xf32, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

// CHECK-LABEL: vortex.flow @f_stage0
// CHECK:       cache(
// CHECK:         vortex.write
// CHECK:       indexer(
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[QM]], %c
// CHECK-NEXT:    vortex.stage_out %[[S]] as "c0_in0"
// CHECK-NEXT:  }
// CHECK-LABEL: vortex.flow @f_stage1
// CHECK:       indexer(
// CHECK-NEXT:    %[[N:.+]] = vortex.stage_in "c0_out"
// CHECK-NEXT:    %[[S1:.+]] = vortex.stage_in "c0_in0"
// CHECK-NEXT:    %[[E:.+]] = vortex.exp %[[N]]
// CHECK-NEXT:    vortex.stage_out %[[E]] as "c1_in0"
// CHECK-NEXT:    vortex.stage_out %[[S1]] as "c1_in1"
// CHECK-NEXT:  }
// CHECK-LABEL: vortex.flow @f_stage2
// CHECK:       indexer(
// CHECK-NEXT:    %[[M:.+]] = vortex.stage_in "c1_out"
// CHECK-NEXT:    vortex.topk %[[M]] into %o
// CHECK-NEXT:  }
// CHECK-NOT:   vortex.flow @f
// CHECK-NOT:   custom_call
// The CPU lowering of each stage: imports and exports are step arguments
// after the sparse CSR, in body order, [total, d0, d1] f32, per the ABI.
// MANIFEST:      "indexer": {
// MANIFEST-NEXT:   "args": [
// MANIFEST:          "sparse_kv_indices",
// MANIFEST-NEXT:     "c0_out",
// MANIFEST-NEXT:     "c0_in0",
// MANIFEST-NEXT:     "c1_in0",
// MANIFEST-NEXT:     "c1_in1"
// MANIFEST-NEXT:   ],
// MANIFEST:        "writes": [
// MANIFEST-NEXT:     "sparse_kv_indptr",
// MANIFEST-NEXT:     "sparse_kv_indices",
// MANIFEST-NEXT:     "c1_in0",
// MANIFEST-NEXT:     "c1_in1"
// MANIFEST:      "tensors": {
// MANIFEST:        "c0_out": {
// MANIFEST-NEXT:     "dtype": "f32",
// MANIFEST-NEXT:     "role": "input",
// MANIFEST-NEXT:     "shape": [
// MANIFEST-NEXT:       "total",
// MANIFEST-NEXT:       1,
// MANIFEST-NEXT:       1
// MANIFEST:        "c1_in0": {
// MANIFEST-NEXT:     "dtype": "f32",
// MANIFEST-NEXT:     "role": "output",
// CPU-LABEL: llvm.func @_mlir_ciface_f_stage0_indexer
// CPU-SAME:    {vortex.name = "sparse_kv_indices"}, %{{.*}}: !llvm.ptr {vortex.name = "c0_in0"})
// CPU-LABEL: llvm.func @_mlir_ciface_f_stage1_indexer
// CPU-LABEL: llvm.func @_mlir_ciface_f_stage2_indexer
// CPU-NOT:   vortex.stage_
// CPU-NOT:   vortex.custom_call
vortex.flow @f config = #cfg fields(c = [1, 8])
cache(%k: !k, %v: !k, %c: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !k -> !cr
  vortex.write %m into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !k, %v: !k, %c: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %c : (!qm, !c) -> !s
  %n = vortex.custom_call "RowNorm"(%s) : (!s) -> !s
  %e = vortex.exp %n : !s -> !s
  %m = vortex.custom_call "Mix"(%e, %s) : (!s, !s) -> !s
  vortex.topk %m into %o : !s into !o
}
