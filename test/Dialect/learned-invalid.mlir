// RUN: vortex-opt %s -split-input-file -verify-diagnostics

// The grouped GeMM and vortex.learned_descriptor refuse what they cannot
// compute (test/Dialect/learned.mlir has the valid forms).

func.func @groups_need_parameter(%q: !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>,
                                 %c: !vortex.vtensor<?x8x8xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.gemm' op groups = 2 requires a 'parameter' weight y (per-group weights run on the standalone parameter path), got 'paged'}}
  %0 = vortex.gemm %q, %c {groups = 2 : i64} : (!vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>, !vortex.vtensor<?x8x8xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @groups_divide(%q: !vortex.vtensor<?x3x8xbf16, #vortex.format<batched>>,
                         %w: !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.gemm' op groups = 2 must divide the rows of x and y, got [?, 3, 8] and [1, 8, 8]}}
  %0 = vortex.gemm %q, %w {groups = 2 : i64} : (!vortex.vtensor<?x3x8xbf16, #vortex.format<batched>>, !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x8x1xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @groups_result(%q: !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>,
                         %w: !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.gemm' op result inner shape must be [8, 1]}}
  %0 = vortex.gemm %q, %w {groups = 2 : i64} : (!vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>, !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x8x2xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @groups_positive(%q: !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>,
                           %w: !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.gemm' op attribute 'groups' failed to satisfy constraint}}
  %0 = vortex.gemm %q, %w {groups = 0 : i64} : (!vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>, !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x8x1xbf16, #vortex.format<batched>>
  return
}

// -----

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
func.func @mix_parameter(%k: !kv, %m: !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>, %p: !pj, %g: !g) {
  // expected-error @+1 {{'vortex.learned_descriptor' op mix must be a 'parameter', got 'paged'}}
  vortex.learned_descriptor %k, %m, %p into %g {heads = 2 : i64} : !kv, !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>, !pj into !g
  return
}

// -----

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
func.func @heads_divide(%k: !kv, %m: !mx, %p: !pj, %g: !g) {
  // expected-error @+1 {{'vortex.learned_descriptor' op heads = 3 must divide the rows of mix [1, 4, 4] and proj [1, 8, 8]}}
  vortex.learned_descriptor %k, %m, %p into %g {heads = 3 : i64} : !kv, !mx, !pj into !g
  return
}

// -----

!kv = !vortex.vtensor<?x8x8xbf16, #vortex.format<paged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
func.func @mix_tokens(%k: !kv, %m: !mx, %p: !pj, %g: !g) {
  // expected-error @+1 {{'vortex.learned_descriptor' op mix [1, 4, 4] must weight the block's 8 tokens (mix [H m, bs])}}
  vortex.learned_descriptor %k, %m, %p into %g {heads = 2 : i64} : !kv, !mx, !pj into !g
  return
}

// -----

!kv = !vortex.vtensor<?x4x16xbf16, #vortex.format<paged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
func.func @proj_channels(%k: !kv, %m: !mx, %p: !pj, %g: !g) {
  // expected-error @+1 {{'vortex.learned_descriptor' op proj [1, 8, 8] must compress the block's 16 channels (proj [H r, d])}}
  vortex.learned_descriptor %k, %m, %p into %g {heads = 2 : i64} : !kv, !mx, !pj into !g
  return
}

// -----

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!g  = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
func.func @field_shape(%k: !kv, %m: !mx, %p: !pj, %g: !g) {
  // expected-error @+1 {{'vortex.learned_descriptor' op field [?, 4, 8] must be [H m, r] = [4, 4]}}
  vortex.learned_descriptor %k, %m, %p into %g {heads = 2 : i64} : !kv, !mx, !pj into !g
  return
}

// -----

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
func.func @block_paged(%k: !kv, %m: !mx, %p: !pj, %g: !g) {
  // expected-error @+1 {{'vortex.learned_descriptor' op block must be a 'paged' pool, got 'ragged'}}
  vortex.learned_descriptor %k, %m, %p into %g {heads = 2 : i64} : !kv, !mx, !pj into !g
  return
}

// -----

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<slotted>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
func.func @field_slotted(%k: !kv, %m: !mx, %p: !pj, %g: !g) {
  // expected-error @+1 {{'vortex.learned_descriptor' op field must be 'paged', got 'slotted'}}
  vortex.learned_descriptor %k, %m, %p into %g {heads = 2 : i64} : !kv, !mx, !pj into !g
  return
}

// -----

// A learned descriptor is a cache-side op.

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(g = [4, 4]) params(mix = [4, 4], proj = [8, 8])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  // expected-error @+1 {{'vortex.learned_descriptor' op is a cache-side op and cannot appear in the indexer body}}
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64} : !kv, !mx, !pj into !g
  %s = vortex.max %g {dim = 2 : i64} : !g -> !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
  %t = vortex.max %s {dim = 1 : i64} : !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>> -> !s
  vortex.topk %t into %o : !s into !o
}

// -----

// It writes a field, never a pool.

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x16x8xbf16, #vortex.format<parameter>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields() params(mix = [4, 4], proj = [16, 8])
cache(%k: !kv, %v: !kv, %mix: !mx, %proj: !pj) {
  // expected-error @+1 {{'vortex.learned_descriptor' op writes 'v', which only the runtime writes}}
  vortex.learned_descriptor %k, %mix, %proj into %v {heads = 2 : i64} : !kv, !mx, !pj into !kv
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %mix: !mx, %proj: !pj) {
  %s = vortex.max %k {dim = 2 : i64} : !kv -> !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
  %t = vortex.max %s {dim = 1 : i64} : !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>> -> !s
  vortex.topk %t into %o : !s into !o
}

// -----

// A packed int4 pool is not read by the learned descriptor's kernels.

!kv = !vortex.vtensor<?x4x8xf32, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = i4>

vortex.flow @f config = #cfg fields(g = [4, 4]) params(mix = [4, 4], proj = [8, 8])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  // expected-error @+1 {{'vortex.learned_descriptor' op reads a packed int4 pool; learned descriptors read bf16, f16, f32 or fp8 pools}}
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64} : !kv, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  %s = vortex.max %g {dim = 2 : i64} : !g -> !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
  %t = vortex.max %s {dim = 1 : i64} : !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>> -> !s
  vortex.topk %t into %o : !s into !o
}

// -----

!kv = !vortex.vtensor<?x4x8192xbf16, #vortex.format<paged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8192xbf16, #vortex.format<parameter>>
func.func @block_width(%k: !kv, %m: !mx, %p: !pj, %g: !g) {
  // expected-error @+1 {{'vortex.learned_descriptor' op block width d = 8192 is over 4096: the kernel holds a token-mixed row of d f32 in shared memory}}
  vortex.learned_descriptor %k, %m, %p into %g {heads = 2 : i64} : !kv, !mx, !pj into !g
  return
}

// -----

// A writer's field must be a field of the flow: a masked copy of one has
// no storage to write.
!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
!s4 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @not_a_field
    config = #vortex.config<block_size = 4, page_size = 4, head_dim = 8,
        group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0,
        reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
    fields(g = [4, 4]) params(mix = [4, 4], proj = [8, 8])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  vortex.fill %g : !g
  %masked = vortex.mask_lanes %g {value = 0.0 : f32} : !g -> !g
  // expected-error @+1 {{'vortex.learned_descriptor' op writes a computed value; it must write a field of the flow (an argument of the cache body)}}
  vortex.learned_descriptor %k, %mix, %proj into %masked {heads = 2 : i64}
      : !kv, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  %a = vortex.max %g {dim = 2 : i64} : !g -> !s4
  %s = vortex.max %a {dim = 1 : i64} : !s4 -> !s
  vortex.topk %s into %o : !s into !o
}

// -----

// Slotted fields mark blocks that write nothing; the learned descriptor
// writes every completed block.

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x8xbf16, #vortex.format<parameter>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!cs = !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>
!f1 = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!qs = !vortex.vtensor<?x4x2xbf16, #vortex.format<ragged>>
!s1 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
vortex.flow @learned config = #cfg fields(g = [4, 4], stamp = [1, 1]) params(mix = [4, 4], proj = [8, 8])
cache(%k: !kv, %v: !kv, %g: !g, %stamp: !cs, %mix: !mx, %proj: !pj) {
  // expected-error @+1 {{'vortex.learned_descriptor' op is not supported in a flow with slotted fields (its kernel writes every completed block; a slot < 0 writes nothing)}}
  vortex.learned_descriptor %k, %mix, %proj into %g {heads = 2 : i64}
      : !kv, !mx, !pj into !g
  vortex.fill %stamp {value = 1.0 : f32} : !cs
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %stamp: !f1, %mix: !mx, %proj: !pj) {
  %s1 = vortex.max %g {dim = 2 : i64} : !g -> !s1
  %s = vortex.max %s1 {dim = 1 : i64} : !s1 -> !s
  vortex.topk %s into %o : !s into !o
}

// -----

// The block is a pool: a field read while the op writes (here itself)
// would race on the GPU.

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g  = !vortex.vtensor<?x4x4xbf16, #vortex.format<paged>>
!mx = !vortex.vtensor<1x4x4xbf16, #vortex.format<parameter>>
!pj = !vortex.vtensor<1x8x4xbf16, #vortex.format<parameter>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!s1 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 4, page_size = 4, head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
vortex.flow @f config = #cfg fields(g = [4, 4]) params(mix = [4, 4], proj = [8, 4])
cache(%k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  // expected-error @+1 {{'vortex.learned_descriptor' op must read the block from a pool (k or v; an MLA flow's latent is k), not a field}}
  vortex.learned_descriptor %g, %mix, %proj into %g {heads = 2 : i64}
      : !g, !mx, !pj into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %g: !g, %mix: !mx, %proj: !pj) {
  %s1 = vortex.max %g {dim = 2 : i64} : !g -> !s1
  %s = vortex.max %s1 {dim = 1 : i64} : !s1 -> !s
  vortex.topk %s into %o : !s into !o
}
