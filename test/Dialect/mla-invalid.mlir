// RUN: vortex-opt %s -split-input-file -verify-diagnostics

// The MLA rules (docs/design.md, "MLA flows"): kv_lora_rank and rope_dim
// both positive and adding up to head_dim; no field named 'latent' (it is
// k); v unused on both sides. Small widths: head_dim 3 = 2 + 1.

// expected-error @+1 {{kv_lora_rank + rope_dim (2 + 2) must equal head_dim (the latent's width), got head_dim = 3}}
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 3, group_size = 2, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 2, rope_dim = 2>
func.func private @f() attributes {c = #cfg}

// -----

// Widths near the i64 limit are refused, not added with overflow (found by
// the fuzzer under UBSan).
// expected-error @+1 {{kv_lora_rank + rope_dim (9223372036854775807 + 64) must equal head_dim (the latent's width), got head_dim = 576}}
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 576, group_size = 2, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 9223372036854775807, rope_dim = 64>
func.func private @f() attributes {c = #cfg}

// -----

// expected-error @+1 {{kv_lora_rank and rope_dim (an MLA flow) must both be positive, got kv_lora_rank = 3, rope_dim = 0}}
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 3, group_size = 2, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 3>
func.func private @f() attributes {c = #cfg}

// -----

// expected-error @+1 {{kv_lora_rank and rope_dim (an MLA flow) must both be positive, got kv_lora_rank = -1, rope_dim = 4}}
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 3, group_size = 2, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = -1, rope_dim = 4>
func.func private @f() attributes {c = #cfg}

// -----

!p = !vortex.vtensor<?x1x3xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x3xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x3xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x2x3xbf16, #vortex.format<batched>>
!bm = !vortex.vtensor<?x1x3xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 3, group_size = 2, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 2, rope_dim = 1>

// expected-error @+1 {{'vortex.flow' op cache field 'latent' is the MLA flow's implicit pool 'k' and must not be declared}}
vortex.flow @f config = #cfg fields(latent = [1, 3])
cache(%k: !p, %v: !p, %latent: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !p -> !r
  vortex.write %m into %latent : !r into !c
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %latent: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !b -> !bm
  %s = vortex.gemm %qm, %latent : (!bm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// -----

!p = !vortex.vtensor<?x1x3xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x3xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x3xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x2x3xbf16, #vortex.format<batched>>
!bm = !vortex.vtensor<?x1x3xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 3, group_size = 2, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 2, rope_dim = 1>

vortex.flow @f config = #cfg fields(centroids = [1, 3])
cache(%k: !p, %v: !p, %centroids: !c) {
  // expected-error @+1 {{'vortex.mean' op uses 'v' of an MLA flow; its one pool is 'k' (the latent [kv_c | k_pe])}}
  %m = vortex.mean %v {dim = 1 : i64} : !p -> !r
  vortex.write %m into %centroids : !r into !c
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !b -> !bm
  %s = vortex.gemm %qm, %centroids : (!bm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// -----

!p = !vortex.vtensor<?x1x3xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x3xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x3xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x2x3xbf16, #vortex.format<batched>>
!bm = !vortex.vtensor<?x1x3xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 3, group_size = 2, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 2, rope_dim = 1>

vortex.flow @f config = #cfg fields(centroids = [1, 3])
cache(%k: !p, %v: !p, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !p -> !r
  vortex.write %m into %centroids : !r into !c
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !b -> !bm
  // expected-error @+1 {{'vortex.gemm' op uses 'v' of an MLA flow; its one pool is 'k' (the latent [kv_c | k_pe])}}
  %s = vortex.gemm %qm, %v : (!bm, !p) -> !s
  vortex.topk %s into %o : !s into !o
}
