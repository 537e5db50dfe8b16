// RUN: vortex-opt %s --vortex-split-custom-calls -o %t.mlir
// RUN: vortex-compile %t.mlir --target=sm_90 --no-cubin --flow=f_stage0 -o %t.g0
// RUN: FileCheck %s --check-prefix=S0 < %t.g0/f_stage0.manifest.json
// RUN: FileCheck %s --check-prefix=PTX0 < %t.g0/f_stage0.ptx
// RUN: vortex-compile %t.mlir --target=sm_90 --no-cubin --flow=f_stage2 -o %t.g2
// RUN: FileCheck %s --check-prefix=S2 < %t.g2/f_stage2.manifest.json
// RUN: not vortex-compile %t.mlir --target=sm_90 --no-cubin --flow=f_stage1 -o %t.g1 2>&1 | FileCheck %s --check-prefix=S1
//
// The GPU lowering of the stages of a split step: an import is read from
// its buffer, an export is stored by the kernel that computes it. Stage 0
// (a workload kernel storing c0_in0, no selection) and stage 2 (the import
// c1_out read by the top-k) compile; stage 1 hands call 0's result to call
// 1 as it is, an export no kernel computes: refused at the op (the GPU
// back end stores an export from its kernel).

!k = !vortex.vtensor<?x4x8xf32, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x8xf32, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x8xf32, #vortex.format<ragged>>
!q = !vortex.vtensor<?x2x8xf32, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x8xf32, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

// S0:      "indexer": {
// S0-NEXT:   "args": [
// S0:          "sparse_kv_indices",
// S0-NEXT:     "c0_in0"
// S0-NEXT:   ],
// S0-NEXT:   "kernels": [
// S0:          "kernel": "f_stage0_indexer_w0",
// S0:          "writes": [
// S0-NEXT:       "c0_in0",
// S0-NEXT:       "status"
// S0-NEXT:     ]
// S0-NOT:      "kernel": "f_stage0_indexer_topk
// S0:        ],
// S0-NEXT:   "writes": [
// S0-NEXT:     "sparse_kv_indptr",
// S0-NEXT:     "sparse_kv_indices",
// S0-NEXT:     "c0_in0"
// PTX0: .entry f_stage0_indexer_w0(

// S2:      "indexer": {
// S2-NEXT:   "args": [
// S2:          "sparse_kv_indices",
// S2-NEXT:     "c1_out"
// S2-NEXT:   ],
// S2:          "kernel": "f_stage2_indexer_topk
// S2:          "reads": [
// S2:            "c1_out"

// S1: error: 'vortex.stage_out' op exports a value no kernel of its stage computes (an argument or an import)
vortex.flow @f config = #cfg fields(c = [1, 8])
cache(%k: !k, %v: !k, %c: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !k -> !cr
  vortex.write %m into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !k, %v: !k, %c: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %c : (!qm, !c) -> !s
  %n = vortex.custom_call "RowNorm"(%s) : (!s) -> !s
  %m = vortex.custom_call "Mix"(%n) : (!s) -> !s
  vortex.topk %m into %o : !s into !o
}
