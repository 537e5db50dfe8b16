// RUN: vortex-opt %s --verify-diagnostics --vortex-fuse
// RUN: not vortex-opt %s --vortex-to-cpu 2>&1 | FileCheck %s
// RUN: not vortex-opt %s --vortex-to-nvvm='chip=sm_90' 2>&1 | FileCheck %s
// RUN: not vortex-compile %s --target=cpu -o %t 2>&1 | FileCheck %s
//
// Both back ends refuse a flow holding a vortex.custom_call, at the op,
// in their first pass (vortex-fuse): a compiled step is one program, so
// the step must be split around the call first (vortex-split-custom-calls;
// docs/python.md, "Custom ops").

!p = !vortex.vtensor<?x1x1xf32, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xf32, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f32>

// CHECK: custom-call-refused.mlir:[[# @LINE + 7]]:8: error: 'vortex.custom_call' op 'Norm' is a custom op (a registered torch function); a compiled step cannot call one
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.custom_call' op 'Norm' is a custom op (a registered torch function); a compiled step cannot call one: split the step around it first}}
  %n = vortex.custom_call "Norm"(%s) : (!r) -> !r
  vortex.topk %n into %o : !r into !o
}
