// RUN: not vortex-opt %s --vortex-to-nvvm='chip=sm_90' 2>&1 | FileCheck %s
//
// The GPU back end does not compile a stage of a split step yet: refused
// at the stage boundary (docs/python.md, "Custom ops").

!k = !vortex.vtensor<?x4x8xf32, #vortex.format<paged>>
!q = !vortex.vtensor<?x2x8xf32, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

// CHECK: split-custom-calls-gpu.mlir:[[# @LINE + 5]]:8: error: 'vortex.stage_in' op is a stage boundary of a step split around a custom op; the GPU back end does not compile stages yet
vortex.flow @f_stage1 config = #cfg fields()
cache(%k: !k, %v: !k) {
}
indexer(%q: !q, %o: !o, %k: !k, %v: !k) {
  %s = vortex.stage_in "c0_out" : !s
  vortex.topk %s into %o : !s into !o
}
