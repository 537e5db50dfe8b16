// RUN: vortex-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of vortex.attend (VortexAttentionOps.cpp and its
// ODS constraints). The valid forms are in attend.mlir.

// -----

func.func @q_rank(%q: tensor<?x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{q must have rank 3, got 'tensor<?x64xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @q_dynamic_heads(%q: tensor<?x?x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{q needs a static positive extent on axis 1, got 'tensor<?x?x64xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x?x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @k_rank(%q: tensor<?x8x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{k must have rank 3, got 'tensor<?x64xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @v_dynamic_block(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x?x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{v needs a static positive extent on axis 1, got 'tensor<?x?x64xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @heads_not_group_multiple(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{q has 8 query heads, not a multiple of group_size 3 (q is [rows, T x G, D])}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 3 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @kv_mismatch(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x8x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{k and v must be pools of one shape and type, got 'tensor<?x16x64xf32>' and 'tensor<?x8x64xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x8x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @kv_types(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xbf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{k and v must be pools of one shape and type, got 'tensor<?x16x64xf32>' and 'tensor<?x16x64xbf16>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @head_dim(%q: tensor<?x8x64xf32>, %k: tensor<?x16x128xf32>, %v: tensor<?x16x128xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{k and v have 128 channels, q's head dim 64 needs 64}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x128xf32>, tensor<?x16x128xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @indptr_rank(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?x1xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{kv_indptr must have rank 1, got 'tensor<?x1xi32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?x1xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @indices_type(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi64>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{operand #4 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?xi64>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi64>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @scale_type(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f64) {
  // expected-error @+1 {{operand #6 must be 32-bit float, but got 'f64'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f64) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @o_type(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{o must be [rows, 8, 64] of q's element type 'f32', got 'tensor<?x8x64xbf16>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>)
  return
}

// -----

func.func @o_shape(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{o must be [rows, 8, 64] of q's element type 'f32', got 'tensor<?x4x64xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x4x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @lse_shape(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{lse must be [rows, 8] of f32, got 'tensor<?x4xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @lse_type(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float values, but got 'tensor<?x8xbf16>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xbf16>)
  return
}

// -----

func.func @indptr_rows(%q: tensor<2x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<4xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{kv_indptr has 4 entries, expected 3 (rows = 2 + 1)}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<2x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<4xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<2x8x64xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @last_len_rows(%q: tensor<2x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<3xi32>, %s: f32) {
  // expected-error @+1 {{kv_last_len has 3 entries, expected 2 (rows = 2)}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<2x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<3xi32>, f32) -> (tensor<2x8x64xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @lse_rows(%q: tensor<2x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{lse has 3 entries, expected 2 (rows = 2)}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<2x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<2x8x64xf32>, tensor<3x8xf32>)
  return
}

// -----

func.func @group_zero(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{attribute 'group_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %o, %lse = vortex.attend %q, %k, %k, %ip, %ip, %ip, %s {group_size = 0 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @int4_without_scales(%q: tensor<?x8x64xf32>, %k: tensor<?x16x32xi8>, %v: tensor<?x16x32xi8>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) {
  // expected-error @+1 {{k and v of i8 are packed int4 pools and need their scales(k_scale, v_scale)}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x32xi8>, tensor<?x16x32xi8>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @scales_of_float_pools(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32, %ks: tensor<?x1x64xf32>, %vs: tensor<?x16x1xf32>) {
  // expected-error @+1 {{scales are for packed int4 pools of i8, got k and v of 'f32'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s scales(%ks, %vs) {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32, tensor<?x1x64xf32>, tensor<?x16x1xf32>) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @int4_width(%q: tensor<?x8x64xf32>, %k: tensor<?x16x64xi8>, %v: tensor<?x16x64xi8>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32, %ks: tensor<?x1x64xf32>, %vs: tensor<?x16x1xf32>) {
  // expected-error @+1 {{k and v have 64 bytes a token, q's head dim 64 needs 32 (two int4 channels a byte; D even)}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s scales(%ks, %vs) {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x64xi8>, tensor<?x16x64xi8>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32, tensor<?x1x64xf32>, tensor<?x16x1xf32>) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @int4_k_scale_shape(%q: tensor<?x8x64xf32>, %k: tensor<?x16x32xi8>, %v: tensor<?x16x32xi8>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32, %ks: tensor<?x16x64xf32>, %vs: tensor<?x16x1xf32>) {
  // expected-error @+1 {{k_scale must be [num_blocks, 1, 64] (per channel), got 'tensor<?x16x64xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s scales(%ks, %vs) {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x32xi8>, tensor<?x16x32xi8>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32, tensor<?x16x64xf32>, tensor<?x16x1xf32>) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @int4_v_scale_shape(%q: tensor<?x8x64xf32>, %k: tensor<?x16x32xi8>, %v: tensor<?x16x32xi8>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32, %ks: tensor<?x1x64xf32>, %vs: tensor<?x1x64xf32>) {
  // expected-error @+1 {{v_scale must be [num_blocks, 16, 1] (per token), got 'tensor<?x1x64xf32>'}}
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s scales(%ks, %vs) {group_size = 8 : i64}
      : (tensor<?x8x64xf32>, tensor<?x16x32xi8>, tensor<?x16x32xi8>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32, tensor<?x1x64xf32>, tensor<?x1x64xf32>) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}

// -----

// One scale only (the generic form; the custom form takes both).
func.func @int4_one_scale(%q: tensor<?x8x64xf32>, %k: tensor<?x16x32xi8>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32, %ks: tensor<?x1x64xf32>) {
  // expected-error @+1 {{takes both scales of a packed int4 pool or none}}
  %o, %lse = "vortex.attend"(%q, %k, %k, %ip, %ix, %ll, %s, %ks) {group_size = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 0>}
      : (tensor<?x8x64xf32>, tensor<?x16x32xi8>, tensor<?x16x32xi8>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32, tensor<?x1x64xf32>) -> (tensor<?x8x64xf32>, tensor<?x8xf32>)
  return
}
