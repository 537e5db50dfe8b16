// RUN: vortex-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

// One case per rule of vortex.flow (FlowOp::verifyRegions and the flow
// parser). Every case uses the config below: block_size = head_dim =
// group_size = 1, so k, v, q and [1, 1] fields are all ?x1x1.

// Fields named k or v are implicit.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op cache field 'k' is implicit and must not be declared}}
vortex.flow @f config = #cfg fields(k = [1, 1])
cache(%k: !p, %v: !p, %k2: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %k2: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op cache field 'v' is implicit and must not be declared}}
vortex.flow @f config = #cfg fields(v = [1, 1])
cache(%k: !p, %v: !p, %v2: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %v2: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Duplicate field.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op cache field 'c' is declared twice}}
vortex.flow @f config = #cfg fields(c = [1, 1], c = [1, 1])
cache(%k: !p, %v: !p, %c0: !p, %c1: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c0: !p, %c1: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A field's shape is checked while parsing the fields list.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{cache field 'c' must have an [r, c] shape in [1, 65536], got [0, 1]}}
vortex.flow @f config = #cfg fields(c = [0, 1])
cache(%k: !p, %v: !p, %c: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{cache field needs a non-empty name}}
vortex.flow @f config = #cfg fields("" = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// An invalid config.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{group_size must be in [1, 65536], got 0}}
vortex.flow @f config = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 0, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16> fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Region argument counts.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op cache body must take k, v and the 1 declared field(s), got 2 argument(s)}}
vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op indexer body must take q, o, k, v and the 0 declared field(s), got 3 argument(s)}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Region argument types.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'k' must have type '!vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>', got '!vortex.vtensor<?x1x1xf16, #vortex.format<paged>>'}}
vortex.flow @f config = #cfg fields()
cache(%k: !vortex.vtensor<?x1x1xf16, #vortex.format<paged>>, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'v' must have type '!vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>', got '!vortex.vtensor<?x2x1xbf16, #vortex.format<paged>>'}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !vortex.vtensor<?x2x1xbf16, #vortex.format<paged>>) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Fields use the intermediate dtype and the declared [r, c].

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'c' must have type '!vortex.vtensor<?x1x2xbf16, #vortex.format<paged>>', got '!vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>'}}
vortex.flow @f config = #cfg fields(c = [1, 2])
cache(%k: !p, %v: !p, %c: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'k' must have type '!vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>', got 'tensor<?x1x1xbf16>'}}
vortex.flow @f config = #cfg fields()
cache(%k: tensor<?x1x1xbf16>, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Batched tensors do not exist on the cache side.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'c' must have type '!vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>', got '!vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>'}}
vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !b) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.save %s into %c : !r into !p
  vortex.topk %s into %o : !r into !o
}

// -----

// Slotted fields exist only on the cache side.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'c' must have type '!vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>', got '!vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>'}}
vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// q is batched [?, T x group_size, head_dim] (T >= 1 query tokens): 3 rows
// at G = 2 are no whole number of tokens.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 2, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'q' must be a batched float vtensor [?, T x 2, 1] (T >= 1 query tokens), got '!vortex.vtensor<?x3x1xbf16, #vortex.format<batched>>'}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !vortex.vtensor<?x3x1xbf16, #vortex.format<batched>>, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'q' must be a batched float vtensor [?, T x 1, 1] (T >= 1 query tokens), got '!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>'}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !r, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'q' must be a batched float vtensor [?, T x 1, 1] (T >= 1 query tokens), got '!vortex.vtensor<?x1x1xi32, #vortex.format<batched>>'}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'q' must be a batched float vtensor [?, T x 1, 1] (T >= 1 query tokens), got 'f32'}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: f32, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// o is the ragged i32 [?, 1, 1] sparse block list.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'o' must have type '!vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>', got '!vortex.vtensor<?x1x1xi32, #vortex.format<batched>>'}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
}

// -----

// Only vortex ops in a flow body.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
  // expected-error @+1 {{'arith.constant' op is not a vortex op; a flow body holds only vortex ops}}
  %c = arith.constant 0 : i32
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Unregistered ops (no dialect) are rejected, not dereferenced.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  // expected-error @+1 {{'foo.bar' op is not a vortex op; a flow body holds only vortex ops}}
  "foo.bar"() : () -> ()
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Indexer-side ops cannot appear in the cache body.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  // expected-error @+1 {{'vortex.load' op is an indexer-side op and cannot appear in the cache body}}
  %l = vortex.load %c : !p -> !r
  vortex.write %l into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  %x = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.save' op is an indexer-side op and cannot appear in the cache body}}
  vortex.save %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  // expected-error @+1 {{'vortex.gemv' op is an indexer-side op and cannot appear in the cache body}}
  %x = vortex.gemv %k, %v : (!p, !p) -> !r
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// vortex_torch.cache has no Transpose.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  // expected-error @+1 {{'vortex.transpose' op is an indexer-side op and cannot appear in the cache body}}
  %x = vortex.transpose %k : !p -> !r
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// vortex_torch.cache has no Kron.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  // expected-error @+1 {{'vortex.kron' op is an indexer-side op and cannot appear in the cache body}}
  %x = vortex.kron %k, %k {dims = array<i64: 1>} : (!p, !p) -> !r
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// vortex_torch.cache has no Sum.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  // expected-error @+1 {{'vortex.sum' op is an indexer-side op and cannot appear in the cache body}}
  %x = vortex.sum %k {dim = 1 : i64} : !p -> !r
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  %x = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.trtllm_topk' op is an indexer-side op and cannot appear in the cache body}}
  %bt, %sl = vortex.trtllm_topk %x {k = 1 : i64} : !r -> !o, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Standalone (S) ops cannot appear in the cache body.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  %x = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.softmax' op is standalone (schedule S); the cache side fuses its ops into one per-block kernel (a learned descriptor is the one exception)}}
  %y = vortex.softmax %x : !r -> !r
  vortex.write %y into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// No cross-block (dim 0) reduction on the cache side.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  %x = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.max' op is standalone (schedule S); the cache side fuses its ops into one per-block kernel (a learned descriptor is the one exception)}}
  %y = vortex.max %x {dim = 0 : i64} : !r -> !b
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A reshape that needs padding runs standalone, so not on the cache side.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #vortex.config<block_size = 4, page_size = 4, head_dim = 3, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16> fields(c = [1, 12])
cache(%k: !vortex.vtensor<?x4x3xbf16, #vortex.format<paged>>, %v: !vortex.vtensor<?x4x3xbf16, #vortex.format<paged>>, %c: !vortex.vtensor<?x1x12xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.reshape' op is standalone (schedule S); the cache side fuses its ops into one per-block kernel (a learned descriptor is the one exception)}}
  %x = vortex.reshape %k : !vortex.vtensor<?x4x3xbf16, #vortex.format<paged>> -> !vortex.vtensor<?x1x12xbf16, #vortex.format<ragged>>
  vortex.write %x into %c : !vortex.vtensor<?x1x12xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x12xbf16, #vortex.format<paged>>
}
indexer(%q: !vortex.vtensor<?x1x3xbf16, #vortex.format<batched>>, %o: !o, %k: !vortex.vtensor<?x4x3xbf16, #vortex.format<paged>>, %v: !vortex.vtensor<?x4x3xbf16, #vortex.format<paged>>, %c: !vortex.vtensor<?x1x12xbf16, #vortex.format<paged>>) {
  %s = vortex.max %c {dim = 2 : i64} : !vortex.vtensor<?x1x12xbf16, #vortex.format<paged>> -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Cache-side ops cannot appear in the indexer.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  // expected-error @+1 {{'vortex.fill' op is a cache-side op and cannot appear in the indexer body}}
  vortex.fill %c : !p
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  vortex.fill %c : !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.write' op is a cache-side op and cannot appear in the indexer body}}
  vortex.write %s into %c : !r into !p
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #vortex.config<block_size = 2, page_size = 2, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16> fields()
cache(%k: !vortex.vtensor<?x2x1xbf16, #vortex.format<paged>>, %v: !vortex.vtensor<?x2x1xbf16, #vortex.format<paged>>) {
}
indexer(%q: !b, %o: !o, %k: !vortex.vtensor<?x2x1xbf16, #vortex.format<paged>>, %v: !vortex.vtensor<?x2x1xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.max_interleave' op is a cache-side op and cannot appear in the indexer body}}
  %s = vortex.max_interleave %k {dim = 1 : i64, factor = 2 : i64} : !vortex.vtensor<?x2x1xbf16, #vortex.format<paged>> -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Intermediates use the flow's intermediate dtype.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  // expected-error @+1 {{'vortex.exp' op intermediate results use the flow's intermediate dtype 'bf16', got 'f32' in the indexer body}}
  %s = vortex.exp %k : !p -> !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
  vortex.topk %s into %o : !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>> into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  // expected-error @+1 {{'vortex.mean' op intermediate results use the flow's intermediate dtype 'bf16', got 'f16' in the cache body}}
  %x = vortex.mean %k {dim = 1 : i64} : !p -> !vortex.vtensor<?x1x1xf16, #vortex.format<ragged>>
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Exactly one terminal selection.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op indexer must end in exactly one vortex.topk, vortex.approx_topk or vortex.union}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op indexer must end in exactly one vortex.topk, vortex.approx_topk or vortex.union}}
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  %bt, %sl = vortex.trtllm_topk %s {k = 1 : i64} : !r -> !o, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
  // expected-error @+1 {{'vortex.approx_topk' op is a second selection; the indexer must end in exactly one topk, approx_topk or union}}
  vortex.approx_topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.topk' op must be the last op of the indexer body}}
  vortex.topk %s into %o : !r into !o
  %t = vortex.exp %s : !r -> !r
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  %bt, %sl = vortex.trtllm_topk %s {k = 1 : i64} : !r -> !o, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
  // expected-error @+1 {{'vortex.topk' op must write the indexer's output 'o'}}
  vortex.topk %s into %bt : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

!sl = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  %bt0, %sl0 = vortex.trtllm_topk %s {k = 1 : i64} : !r -> !o, !sl
  %bt1, %sl1 = vortex.trtllm_topk %s {k = 2 : i64} : !r -> !o, !sl
  // expected-error @+1 {{'vortex.union' op must write the indexer's output 'o'}}
  vortex.union (%bt0, %sl0), (%bt1, %sl1) into %bt0 : !o, !sl into !o
}

// -----

// Only the runtime writes k and v.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
  // expected-error @+1 {{'vortex.fill' op writes 'v', which only the runtime writes}}
  vortex.fill %v : !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
  %x = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.write' op writes 'k', which only the runtime writes}}
  vortex.write %x into %k : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields()
cache(%k: !p, %v: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.save' op writes 'k', which only the runtime writes}}
  vortex.save %s into %k : !r into !p
  vortex.topk %s into %o : !r into !o
}

// -----

// Every field is written (cache write/fill or indexer save) ...

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op cache field 'c' is never written (by vortex.write, vortex.fill or vortex.learned_descriptor on the cache side, or vortex.save on the indexer side)}}
vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Generic form: each region holds exactly one block.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op region #0 ('cache') failed to verify constraint: region with 1 blocks}}
"vortex.flow"() <{sym_name = "f", config = #cfg, fields = []}> ({
}, {
^bb0(%q: !b, %o: !o, %k: !p, %v: !p):
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}) : () -> ()

// -----

// Parameter names are unique across k, v, the fields and the parameters.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op parameter 'w' is declared twice}}
vortex.flow @f config = #cfg fields() params(w = [1, 1], w = [1, 1])
cache(%k: !p, %v: !p, %w0: !w, %w1: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w0: !w, %w1: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op parameter 'k' takes the name of the cache tensor 'k'}}
vortex.flow @f config = #cfg fields() params(k = [1, 1])
cache(%k: !p, %v: !p, %k2: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %k2: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op parameter 'c' takes the name of a cache field}}
vortex.flow @f config = #cfg fields(c = [1, 1]) params(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p, %c2: !w) {
  %x = vortex.max %k {dim = 1 : i64} : !p -> !r
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p, %c2: !w) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A parameter or a field may not take the name of another step argument
// of the compiled flow (the manifest names every tensor once).

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op parameter 'q' takes the name of a step argument of the compiled flow}}
vortex.flow @f config = #cfg fields() params(q = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op cache field 'block_ids' takes the name of a step argument of the compiled flow}}
vortex.flow @f config = #cfg fields(block_ids = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  %x = vortex.max %k {dim = 1 : i64} : !p -> !r
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A parameter's shape and name are checked while parsing the list.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{parameter 'w' must have an [r, c] shape in [1, 65536], got [0, 1]}}
vortex.flow @f config = #cfg fields() params(w = [0, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{parameter needs a non-empty name}}
vortex.flow @f config = #cfg fields() params("" = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Both bodies take the parameters after the fields.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op cache body must take k, v and the 1 declared field(s) and the 1 parameter(s), got 3 argument(s)}}
vortex.flow @f config = #cfg fields(c = [1, 1]) params(w = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p, %w: !w) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op indexer body must take q, o, k, v and the 0 declared field(s) and the 1 parameter(s), got 4 argument(s)}}
vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A parameter is [1, r, c] of the intermediate dtype, format parameter.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'w' must have type '!vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>', got '!vortex.vtensor<?x1x1xbf16, #vortex.format<parameter>>'}}
vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !vortex.vtensor<?x1x1xbf16, #vortex.format<parameter>>) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'w' must have type '!vortex.vtensor<1x1x2xbf16, #vortex.format<parameter>>', got '!vortex.vtensor<1x1x2xbf16, #vortex.format<paged>>'}}
vortex.flow @f config = #cfg fields() params(w = [1, 2])
cache(%k: !p, %v: !p, %w: !vortex.vtensor<1x1x2xbf16, #vortex.format<parameter>>) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !vortex.vtensor<1x1x2xbf16, #vortex.format<paged>>) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op argument 'w' must have type '!vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>', got '!vortex.vtensor<1x1x1xf32, #vortex.format<parameter>>'}}
vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !vortex.vtensor<1x1x1xf32, #vortex.format<parameter>>) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A parameter is read-only in both steps.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.exp %k : !p -> !r
  // expected-error @+1 {{'vortex.save' op writes parameter 'w', which is read-only (a parameter is bound at run time and never written by a step)}}
  vortex.save %s into %w : !r into !w
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
  %x = vortex.max %k {dim = 1 : i64} : !p -> !r
  // expected-error @+1 {{'vortex.write' op writes parameter 'w', which is read-only (a parameter is bound at run time and never written by a step)}}
  vortex.write %x into %w : !r into !w
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields() params(w = [1, 1], scale = [1, 1])
cache(%k: !p, %v: !p, %w: !w, %scale: !w) {
  // expected-error @+1 {{'vortex.fill' op writes parameter 'scale', which is read-only (a parameter is bound at run time and never written by a step)}}
  vortex.fill %scale {value = 0.0 : f32} : !w
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w, %scale: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A parameter is not per-block state: no vortex.load.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  // expected-error @+1 {{'vortex.load' op reads parameter 'w' as a field; a parameter is not per-block state: use it directly as an operand}}
  %s = vortex.load %w : !w -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// Where a parameter is not allowed: ops over the blocks of a row
// (selection, scans, reductions over dim 0) need a ragged operand.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  // expected-error @+1 {{'vortex.topk' op score must be 'ragged', got 'parameter'}}
  vortex.topk %w into %o : !w into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  // expected-error @+1 {{'vortex.softmax' op requires a 'ragged' input and result, got 'parameter' -> 'ragged'}}
  %s = vortex.softmax %w : !w -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields() params(w = [1, 1])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  // expected-error @+1 {{'vortex.sum' op reduction over dim 0 requires a 'ragged' input, got 'parameter'}}
  %m = vortex.sum %w {dim = 0 : i64} : !w -> !b
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// The compute_param gemm (a parameter y) needs a batched x: on the cache
// side, which has no batched value, a parameter is only gemm's x.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

vortex.flow @f config = #cfg fields(c = [1, 1]) params(w = [1, 1])
cache(%k: !p, %v: !p, %c: !p, %w: !w) {
  // expected-error @+1 {{'vortex.gemm' op a 'parameter' weight requires a 'batched' x, got 'paged'}}
  %x = vortex.gemm %k, %w : (!p, !w) -> !b
  %y = vortex.max %k {dim = 1 : i64} : !p -> !r
  vortex.write %y into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p, %w: !w) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// The indexer may not use a slotted field (cache-side storage addressed
// through slot_of_ptr; docs/contract.md "Slotted fields").

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !s) {
  %x = vortex.max %k {dim = 1 : i64} : !p -> !r
  vortex.write %x into %c : !r into !s
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  // expected-error @+1 {{'vortex.load' op uses the slotted field 'c' on the indexer side; slotted fields are cache-side storage addressed through slot_of_ptr}}
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A slotted field must be written on the cache side.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
// expected-error @+1 {{'vortex.flow' op slotted field 'c' is never written (by vortex.write or vortex.fill on the cache side)}}
vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !s) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A parameter over the tile bound is streamed: only GeMM's weight y may
// read it (the indexer side).

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
!w = !vortex.vtensor<1x4x65536xbf16, #vortex.format<parameter>>
!r4 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>

vortex.flow @f config = #cfg fields() params(w = [4, 65536])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  // expected-error @+1 {{'vortex.max' op reads the parameter [4, 65536] as operand 0; a parameter over the tile bound (131072 elements, padded) is streamed and may only be GeMM's weight y}}
  %m = vortex.max %w {dim = 2 : i64} : !w -> !r4
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// The same on the cache side.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
!w = !vortex.vtensor<1x4x65536xbf16, #vortex.format<parameter>>
!r4 = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>

vortex.flow @f config = #cfg fields() params(w = [4, 65536])
cache(%k: !p, %v: !p, %w: !w) {
  // expected-error @+1 {{'vortex.max' op reads the parameter [4, 65536] as operand 0; a parameter over the tile bound}}
  %m = vortex.max %w {dim = 2 : i64} : !w -> !r4
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A declared parameter is bounded by 2^24 elements (padded).

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>
!w = !vortex.vtensor<1x1x1xbf16, #vortex.format<parameter>>

// expected-error @+1 {{parameter 'w' [65536, 65536] must have at most 16777216 elements (padded to powers of two)}}
vortex.flow @f config = #cfg fields() params(w = [65536, 65536])
cache(%k: !p, %v: !p, %w: !w) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %w: !w) {
  %s = vortex.exp %k : !p -> !r
  vortex.topk %s into %o : !r into !o
}

// -----

// A cache field is held in a tile: its bound is the tile's.

!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16, kv_dtype = bf16>

// expected-error @+1 {{'vortex.flow' op cache field 'c' [512, 512] must have at most 131072 elements (padded to powers of two)}}
vortex.flow @f config = #cfg fields(c = [512, 512])
cache(%k: !p, %v: !p, %c: !p) {
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  vortex.topk %s into %o : !r into !o
}
