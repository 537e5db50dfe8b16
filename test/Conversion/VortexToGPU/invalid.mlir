// RUN: vortex-opt %s --split-input-file --verify-diagnostics --vortex-fuse --convert-vortex-to-gpu

// Intermediates (fields, scratch, parameters) stored in fp8 are refused:
// narrowing to fp8 has no NVVM lowering in LLVM 22 (fp8 k and v are
// supported, test fp8.mlir).
!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xf8E5M2, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xf8E5M2, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f8E5M2, kv_dtype = bf16>
// expected-error @+1 {{'vortex.flow' op stores its intermediates in fp8 ('f8E5M2'), which the GPU code generator does not support yet; fp8 is supported for k and v (kv_dtype)}}
vortex.flow @f8_param config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.multiply %k, %w : (!p, !w) -> !r
  vortex.topk %s into %o : !r into !o
}
