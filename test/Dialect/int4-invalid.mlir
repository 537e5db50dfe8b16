// RUN: vortex-opt %s -split-input-file -verify-diagnostics

// Packed int4 k/v (kv_dtype = i4, docs/contract.md "INT4 KV"): what the
// config and flow verifiers refuse.

// expected-error @+1 {{kv_dtype = i4 packs two channels a byte: head_dim must be even, got 127}}
func.func @odd_head_dim() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 127, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = i4>}

// -----

// expected-error @+1 {{kv_dtype = i4 is not supported for MLA flows}}
func.func @mla() attributes {c = #vortex.config<block_size = 32, page_size = 32, head_dim = 576, group_size = 16, topk_val = 29, topk_ratio = 0.0, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = i4, kv_lora_rank = 512, rope_dim = 64>}

// -----

// expected-error @+1 {{intermediate_dtype must be bf16, f16, f32, f8E4M3FN or f8E5M2, got 'i4'}}
func.func @intermediate() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = i4, kv_dtype = i4>}

// -----

// expected-error @+1 {{kv_dtype must be bf16, f16, f32, f8E4M3FN, f8E5M2 or i4, got 'ui4'}}
func.func @unsigned() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = ui4>}

// -----

// k and v of an int4 flow are their dequantized f32 values.
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// expected-error @+1 {{argument 'k' must have type '!vortex.vtensor<?x16x128xf32, #vortex.format<paged>>', got '!vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>'}}
vortex.flow @bf16_pool
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = i4>
    fields(c = [1, 128])
cache(%k: !kv, %v: !kv, %c: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %c : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// -----

!kv = !vortex.vtensor<?x16x128xf32, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// expected-error @+1 {{cache field 'k_int4_scale' takes the name of a step argument of the compiled flow}}
vortex.flow @scale_field
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = i4>
    fields(k_int4_scale = [1, 128])
cache(%k: !kv, %v: !kv, %c: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %c : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}
