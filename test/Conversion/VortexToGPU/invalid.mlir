// RUN: vortex-opt %s --split-input-file --verify-diagnostics --vortex-fuse --convert-vortex-to-gpu

// The trtllm backend's selection has no GPU kernel yet.
!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!t = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!l = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  %x = vortex.max %k {dim = 1 : i64} : !p -> !r
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  // expected-error @+1 {{'vortex.trtllm_topk' op (the trtllm backend's selection) has no GPU kernel yet; use vortex.topk}}
  %t0, %l0 = vortex.trtllm_topk %s {k = 4 : i64} : !r -> !t, !l
  %t1, %l1 = vortex.trtllm_topk %s {k = 2 : i64} : !r -> !t, !l
  vortex.union (%t0, %l0), (%t1, %l1) into %o : !t, !l into !o
}

// -----

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
