// RUN: vortex-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of the vtensor type, the attributes and the op
// verifiers (VortexDialect.cpp, VortexOps.cpp, and the ODS constraints).
// The flow op's rules are in invalid-flow.mlir.

//===----------------------------------------------------------------------===//
// vtensor type
//===----------------------------------------------------------------------===//

// expected-error @+1 {{vtensor must have rank 3 [L, D0, D1], got rank 2}}
func.func @rank2(%a: !vortex.vtensor<8x128xbf16, #vortex.format<batched>>)

// -----

// expected-error @+1 {{vtensor must have rank 3 [L, D0, D1], got rank 4}}
func.func @rank4(%a: !vortex.vtensor<?x1x8x128xbf16, #vortex.format<batched>>)

// -----

// expected-error @+1 {{vtensor inner extent D0 must be static and in [1, 65536]}}
func.func @dynamic_d0(%a: !vortex.vtensor<?x?x128xbf16, #vortex.format<ragged>>)

// -----

// expected-error @+1 {{vtensor inner extent D1 must be static and in [1, 65536]}}
func.func @zero_d1(%a: !vortex.vtensor<?x8x0xbf16, #vortex.format<ragged>>)

// -----

// expected-error @+1 {{vtensor element type must be bf16, f16, f32, f8E4M3FN, f8E5M2 or i32, got 'f64'}}
func.func @f64(%a: !vortex.vtensor<?x8x128xf64, #vortex.format<ragged>>)

// -----

// expected-error @+1 {{vtensor element type must be bf16, f16, f32, f8E4M3FN, f8E5M2 or i32, got 'i64'}}
func.func @i64(%a: !vortex.vtensor<?x1x1xi64, #vortex.format<ragged>>)

// -----

// expected-error @+1 {{expected a #vortex.format attribute}}
func.func @not_a_format(%a: !vortex.vtensor<?x8x128xbf16, #vortex.reduce_kind<max>>)

// -----

// expected-error @+1 {{padded inner shape must be the next powers of two of [D0, D1]}}
func.func @bad_padding(%a: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [5, 128]>)

// -----

// expected-error @+1 {{padded inner shape must be the next powers of two of [D0, D1]}}
func.func @padding_rank(%a: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8]>)

// -----

// expected-error @+1 {{padded inner shape must be the next powers of two of [D0, D1]}}
func.func @padding_too_big(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>, padded = [16, 128]>)

// -----

//===----------------------------------------------------------------------===//
// #vortex.config
//===----------------------------------------------------------------------===//

// expected-error @+1 {{block_size must be a positive power of two, got 12}}
func.func @block_size() attributes {c = #vortex.config<block_size = 12, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{page_size must be a positive power of two, got 0}}
func.func @page_size() attributes {c = #vortex.config<block_size = 16, page_size = 0, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{block_size (32) must not exceed page_size (16)}}
func.func @block_gt_page() attributes {c = #vortex.config<block_size = 32, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{head_dim must be in [1, 65536], got 0}}
func.func @head_dim() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 0, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{group_size must be in [1, 65536], got -4}}
func.func @group_size() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = -4, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{topk_val must be in [0, 2147483647], got -1}}
func.func @topk_val() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = -1, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// Bounds (docs/contract.md): fuzzing found topk_val = INT64_MAX accepted,
// and topk_val + reserved_bos + reserved_eos overflowing in the lowerings.
// expected-error @+1 {{topk_val must be in [0, 2147483647], got 9223372036854775807}}
func.func @topk_val_max() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 9223372036854775807, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{topk_val + reserved_bos + reserved_eos must be at most 2147483647 (an i32 row budget), got 2147483648}}
func.func @budget_overflow() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 2147483000, topk_ratio = 0.0625, reserved_bos = 600, reserved_eos = 48, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{reserved_bos and reserved_eos must be in [0, 2147483647], got 4294967296 and 2}}
func.func @reserved_max() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 4294967296, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{head_dim must be in [1, 65536], got 65537}}
func.func @head_dim_max() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 65537, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{page_size must be at most 1048576, got 2097152}}
func.func @page_size_max() attributes {c = #vortex.config<block_size = 16, page_size = 2097152, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{vtensor inner extent D1 must be static and in [1, 65536]}}
func.func @huge_d1(%a: !vortex.vtensor<?x8x4611686018427387904xbf16, #vortex.format<ragged>>)

// -----

// expected-error @+1 {{cache field 'c' must have an [r, c] shape in [1, 65536], got [1, 100000]}}
func.func @field_max() attributes {f = #vortex.field<"c", 1, 100000>}

// -----

// expected-error @+1 {{topk_ratio must be in [0, 1], got 1.500000e+00}}
func.func @topk_ratio() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 1.5, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+2 {{topk_ratio must be a float literal (e.g. 0.0 or 6.25e-02), got 0 : i64}}
// expected-error @+1 {{failed to parse Vortex_FlowConfigAttr parameter 'topk_ratio'}}
func.func @topk_ratio_int() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{reserved_bos and reserved_eos must be in [0, 2147483647], got 1 and -2}}
func.func @reserved() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = -2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{intermediate_dtype must be bf16, f16, f32, f8E4M3FN or f8E5M2, got 'i32'}}
func.func @intermediate_dtype() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = i32, kv_dtype = bf16>}

// -----

// expected-error @+1 {{kv_dtype must be bf16, f16, f32, f8E4M3FN, f8E5M2 or i4, got 'f64'}}
func.func @kv_dtype() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = f64>}

// -----

//===----------------------------------------------------------------------===//
// #vortex.field
//===----------------------------------------------------------------------===//

// expected-error @+1 {{cache field needs a non-empty name}}
func.func @field_name() attributes {f = #vortex.field<"", 1, 128>}

// -----

// expected-error @+1 {{cache field 'centroids' must have an [r, c] shape in [1, 65536], got [0, 128]}}
func.func @field_shape() attributes {f = #vortex.field<"centroids", 0, 128>}

// -----

// expected-error @+1 {{cache field 'centroids' must have an [r, c] shape in [1, 65536], got [1, -1]}}
func.func @field_shape_cols() attributes {f = #vortex.field<"centroids", 1, -1>}

// -----

//===----------------------------------------------------------------------===//
// ODS type constraints
//===----------------------------------------------------------------------===//

func.func @not_a_vtensor(%a: tensor<4x1x128xbf16>) {
  // expected-error @+1 {{'vortex.mean' op operand #0 must be vtensor of floating-point values, but got 'tensor<4x1x128xbf16>'}}
  %0 = "vortex.mean"(%a) {dim = 1 : i64} : (tensor<4x1x128xbf16>) -> !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @i32_score(%s: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>,
                     %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.topk' op operand #0 must be vtensor of floating-point values, but got '!vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>'}}
  vortex.topk %s into %o : !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>> into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @f32_output(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>,
                      %o: !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.topk' op operand #1 must be vtensor of i32 block ids, but got '!vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>'}}
  vortex.topk %s into %o : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
  return
}

// -----

func.func @i32_result(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.exp' op result #0 must be vtensor of floating-point values, but got '!vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>'}}
  %0 = vortex.exp %s : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @union_types(%bt: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>,
                       %sl: !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>,
                       %bt1: !vortex.vtensor<4x1x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.union' op failed to verify that all of {lhs_table, rhs_table} have same type}}
  "vortex.union"(%bt, %sl, %bt1, %sl, %bt) : (!vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>, !vortex.vtensor<4x1x1xi32, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>, !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>) -> ()
  return
}

// -----

func.func @missing_dim(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.max' op requires attribute 'dim'}}
  %0 = vortex.max %a : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @conv1d_int_weight(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.conv1d' op attribute 'weight' failed to satisfy constraint: 32-bit float elements attribute}}
  %0 = vortex.conv1d %s {weight = dense<1> : tensor<2x1x1xi32>} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Shared workload rules (leading extent, parameter inputs, output format,
// result inner shape)
//===----------------------------------------------------------------------===//

func.func @static_leading(%a: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.transpose' op static leading extent 4 of the result does not match input [?, 1, 8]; use '?'}}
  %0 = vortex.transpose %a : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<4x8x1xbf16, #vortex.format<ragged>>
  return
}

// -----

// An op of parameters alone gives no row domain: ragged (every position
// holds the value), not batched.
func.func @parameter_input(%w: !vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.relu' op result format must be 'ragged' (batched iff every input is batched or a parameter and at least one is batched, else ragged), got 'batched'}}
  %0 = vortex.relu %w : !vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>> -> !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @parameter_result(%w: !vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.exp' op result format must be 'ragged' (batched iff every input is batched or a parameter and at least one is batched, else ragged), got 'parameter'}}
  %0 = vortex.exp %w : !vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>> -> !vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>>
  return
}

// -----

// A parameter keeps a batched result batched (one row shared by every row).
func.func @parameter_rhs(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
                         %w: !vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.add' op result format must be 'batched' (batched iff every input is batched or a parameter and at least one is batched, else ragged), got 'ragged'}}
  %0 = vortex.add %a, %w : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @parameter_paged(%c: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>,
                           %w: !vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.kron' op result format must be 'ragged' (batched iff every input is batched or a parameter and at least one is batched, else ragged), got 'batched'}}
  %0 = vortex.kron %w, %c {dims = array<i64: 1>} : (!vortex.vtensor<1x8x128xbf16, #vortex.format<parameter>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @result_format_batched(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>) {
  // expected-error @+1 {{'vortex.exp' op result format must be 'batched' (batched iff every input is batched, else ragged), got 'ragged'}}
  %0 = vortex.exp %a : !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>> -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @result_format_ragged(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
                                %c: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.multiply' op result format must be 'ragged' (batched iff every input is batched, else ragged), got 'batched'}}
  %0 = vortex.multiply %a, %c : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @result_paged(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.abs' op result format must be 'ragged' (batched iff every input is batched, else ragged), got 'paged'}}
  %0 = vortex.abs %a : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x128xbf16, #vortex.format<paged>>
  return
}

// -----

func.func @same_shape(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.sigmoid' op result inner shape must be [8, 128], got [8, 64]}}
  %0 = vortex.sigmoid %a : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x64xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gemm / gemv
//===----------------------------------------------------------------------===//

func.func @gemm_contraction(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
                            %c: !vortex.vtensor<?x1x64xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.gemm' op contraction extents differ: x is [?, 8, 128], y is [?, 1, 64] (GeMM(x, y) = y x^T needs equal last extents)}}
  %0 = vortex.gemm %q, %c : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x64xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  return
}

// -----

// A parameter x broadcasts like a batched row; two parameters are not the
// compute_param form (its y needs a batched x).
func.func @gemm_x_parameter(%w: !vortex.vtensor<1x2x128xbf16, #vortex.format<parameter>>,
                            %c: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.gemm' op result format must be 'ragged' (batched iff every input is batched or a parameter and at least one is batched, else ragged), got 'batched'}}
  %0 = vortex.gemm %w, %c : (!vortex.vtensor<1x2x128xbf16, #vortex.format<parameter>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x2xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @gemm_two_parameters(%w: !vortex.vtensor<1x2x128xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.gemm' op a 'parameter' weight requires a 'batched' x, got 'parameter'}}
  %0 = vortex.gemm %w, %w : (!vortex.vtensor<1x2x128xbf16, #vortex.format<parameter>>, !vortex.vtensor<1x2x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x2x2xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @gemm_parameter_ragged_x(%x: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>,
                                   %w: !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.gemm' op a 'parameter' weight requires a 'batched' x, got 'ragged'}}
  %0 = vortex.gemm %x, %w : (!vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>, !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @gemm_parameter_result(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
                                 %w: !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.gemm' op GeMM with a 'parameter' weight produces a 'batched' result, got 'ragged'}}
  %0 = vortex.gemm %q, %w : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x2x8xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @gemm_parameter_shape(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
                                %w: !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>) {
  // expected-error @+1 {{'vortex.gemm' op result inner shape must be [2, 8], got [8, 2]}}
  %0 = vortex.gemm %q, %w : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x8x2xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @gemm_shape(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
                      %c: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.gemm' op result inner shape must be [1, 8], got [8, 1]}}
  %0 = vortex.gemm %q, %c : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @gemv_rows(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
                     %c: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.gemv' op operands must have one row (D0 == 1), got [?, 8, 128] and [?, 1, 128]}}
  %0 = vortex.gemv %q, %c : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @gemv_lengths(%q: !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>,
                        %c: !vortex.vtensor<?x1x64xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.gemv' op operand lengths differ: 128 vs 64}}
  %0 = vortex.gemv %q, %c : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x64xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @gemv_shape(%q: !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>,
                      %c: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.gemv' op result inner shape must be [1, 1], got [1, 128]}}
  %0 = vortex.gemv %q, %c : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

func.func @reduce_dim(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.sum' op dim must be 0, 1 or 2, got 3}}
  %0 = vortex.sum %a {dim = 3 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @reduce_negative_dim(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.max' op dim must be 0, 1 or 2, got -1}}
  %0 = vortex.max %a {dim = -1 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @reduce_dim0_input(%a: !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) {
  // expected-error @+1 {{'vortex.mean' op reduction over dim 0 requires a 'ragged' input, got 'batched'}}
  %0 = vortex.mean %a {dim = 0 : i64} : !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @reduce_dim0_result(%a: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.min' op reduction over dim 0 produces a 'batched' result, got 'ragged'}}
  %0 = vortex.min %a {dim = 0 : i64} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @reduce_dim0_shape(%a: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.l2norm' op result inner shape must be [1, 8], got [1, 1]}}
  %0 = vortex.l2norm %a {dim = 0 : i64} : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @reduce_dim1_shape(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.max' op result inner shape must be [1, 128], got [8, 1]}}
  %0 = vortex.max %a {dim = 1 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @reduce_dim2_shape(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.mean' op result inner shape must be [8, 1], got [1, 128]}}
  %0 = vortex.mean %a {dim = 2 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @reduce_format(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.max' op result format must be 'ragged' (batched iff every input is batched, else ragged), got 'paged'}}
  %0 = vortex.max %a {dim = 1 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<paged>> -> !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Interleaved reductions
//===----------------------------------------------------------------------===//

func.func @interleave_dim(%k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.max_interleave' op dim must be 1 or 2, got 0}}
  %0 = vortex.max_interleave %k {dim = 0 : i64, factor = 2 : i64} : !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>> -> !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @interleave_factor(%k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.min_interleave' op factor must be positive, got 0}}
  %0 = vortex.min_interleave %k {dim = 1 : i64, factor = 0 : i64} : !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>> -> !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @interleave_multiple(%k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.mean_interleave' op extent 16 along dim 1 is not a multiple of the factor 3}}
  %0 = vortex.mean_interleave %k {dim = 1 : i64, factor = 3 : i64} : !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>> -> !vortex.vtensor<?x5x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @interleave_shape(%k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.l2norm_interleave' op result inner shape must be [16, 32], got [16, 64]}}
  %0 = vortex.l2norm_interleave %k {dim = 2 : i64, factor = 4 : i64} : !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>> -> !vortex.vtensor<?x16x64xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Row-segment ops
//===----------------------------------------------------------------------===//

func.func @softmax_dim(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.softmax' op only dim = 0 (over the blocks of a row) is supported, got 1}}
  %0 = vortex.softmax %s {dim = 1 : i64} : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @softmax_format(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<batched>>) {
  // expected-error @+1 {{'vortex.softmax' op requires a 'ragged' input and result, got 'batched' -> 'batched'}}
  %0 = vortex.softmax %s : !vortex.vtensor<?x1x8xbf16, #vortex.format<batched>> -> !vortex.vtensor<?x1x8xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @normalize_format(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.normalize' op requires a 'ragged' input and result, got 'ragged' -> 'batched'}}
  %0 = vortex.normalize %s : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @normalize_shape(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.normalize' op result inner shape must be [1, 8], got [8, 1]}}
  %0 = vortex.normalize %s : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @segment_leading(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.normalize' op static leading extent 16 of the result does not match input [?, 1, 8]; use '?'}}
  %0 = vortex.normalize %s : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<16x1x8xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @conv1d_dim(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.conv1d' op only dim = 0 (over the blocks of a row) is supported, got 2}}
  %0 = vortex.conv1d %s {dim = 2 : i64, weight = dense<0.5> : tensor<2x1x1xf32>} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @conv1d_weight(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.conv1d' op weight must be [K, 1, 8] with K >= 1, got 'tensor<2x1x1xf32>'}}
  %0 = vortex.conv1d %s {weight = dense<0.5> : tensor<2x1x1xf32>} : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @conv1d_weight_rank(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.conv1d' op weight must be [K, 1, 1] with K >= 1, got 'tensor<2xf32>'}}
  %0 = vortex.conv1d %s {weight = dense<0.5> : tensor<2xf32>} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @conv1d_weight_empty(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.conv1d' op weight must be [K, 1, 1] with K >= 1, got 'tensor<0x1x1xf32>'}}
  %0 = vortex.conv1d %s {weight = dense<> : tensor<0x1x1xf32>} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

func.func @transpose_shape(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.transpose' op result inner shape must be [8, 1], got [1, 8]}}
  %0 = vortex.transpose %s : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @reshape_count(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.reshape' op reshape must keep the inner element count: [?, 1, 8] has 8, [?, 3, 3] has 9}}
  %0 = vortex.reshape %s : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x3x3xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @reshape_format(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.reshape' op result format must be 'ragged' (batched iff every input is batched, else ragged), got 'batched'}}
  %0 = vortex.reshape %s : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x2x4xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @kron_empty(%a: !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.kron' op dims must be a non-empty subset of {1, 2}}}
  %0 = vortex.kron %a, %a {dims = array<i64>} : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @kron_too_many(%a: !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.kron' op dims must be a non-empty subset of {1, 2}}}
  %0 = vortex.kron %a, %a {dims = array<i64: 1, 2, 1>} : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x4x9xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @kron_axis(%a: !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.kron' op dims must be a subset of {1, 2}, got 0}}
  %0 = vortex.kron %a, %a {dims = array<i64: 0>} : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @kron_repeat(%a: !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.kron' op dims must not repeat an axis, got 2 twice}}
  %0 = vortex.kron %a, %a {dims = array<i64: 2, 2>} : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x2x9xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @kron_broadcast(%a: !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>,
                          %b: !vortex.vtensor<?x4x5xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.kron' op non-Kronecker axis 1 does not broadcast: 2 vs 4}}
  %0 = vortex.kron %a, %b {dims = array<i64: 2>} : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x4x5xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x4x15xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @kron_shape(%a: !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>,
                      %b: !vortex.vtensor<?x4x3xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.kron' op result inner shape must be [8, 3], got [8, 9]}}
  %0 = vortex.kron %a, %b {dims = array<i64: 1>} : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x4x3xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x8x9xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

func.func @binary_broadcast(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>,
                            %b: !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.maximum' op inner shapes [?, 8, 128] and [?, 4, 128] do not broadcast (each pair must be equal or 1)}}
  %0 = vortex.maximum %a, %b : (!vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @binary_shape(%a: !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>,
                        %b: !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.where_gt' op result inner shape must be [8, 128], got [8, 1]}}
  %0 = vortex.where_gt %a, %b : (!vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @binary_leading(%a: !vortex.vtensor<16x1x1xbf16, #vortex.format<ragged>>,
                          %b: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.minimum' op static leading extent 16 of the result does not match input [?, 1, 1]; use '?'}}
  %0 = vortex.minimum %a, %b : (!vortex.vtensor<16x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<16x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mask_slice
//===----------------------------------------------------------------------===//

func.func @mask_dim(%r: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.mask_slice' op dim must be 1 or 2, got 0}}
  %0 = vortex.mask_slice %r {start = 0 : i64, end = 1 : i64, dim = 0 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @mask_end(%r: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.mask_slice' op slice [0, 9) must satisfy 0 <= start <= end <= 8 (the extent along dim 1)}}
  %0 = vortex.mask_slice %r {start = 0 : i64, end = 9 : i64, dim = 1 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @mask_order(%r: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.mask_slice' op slice [4, 2) must satisfy 0 <= start <= end <= 128 (the extent along dim 2)}}
  %0 = vortex.mask_slice %r {start = 4 : i64, end = 2 : i64, dim = 2 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @mask_start(%r: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.mask_slice' op slice [-1, 2) must satisfy 0 <= start <= end <= 128 (the extent along dim 2)}}
  %0 = vortex.mask_slice %r {start = -1 : i64, end = 2 : i64, dim = 2 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @mask_shape(%r: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.mask_slice' op result inner shape must be [8, 128], got [8, 8]}}
  %0 = vortex.mask_slice %r {start = 0 : i64, end = 8 : i64, dim = 2 : i64} : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x8x8xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// fill / write / save / load
//===----------------------------------------------------------------------===//

func.func @fill_ragged(%f: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.fill' op field must be 'paged' or 'slotted', got 'ragged'}}
  vortex.fill %f : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @write_value(%v: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>,
                       %f: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.write' op value must be a 'ragged' per-block tensor, got 'paged'}}
  vortex.write %v into %f : !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>> into !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
  return
}

// -----

func.func @write_field(%v: !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>,
                       %f: !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>) {
  // expected-error @+1 {{'vortex.write' op field must be 'paged' or 'slotted', got 'batched'}}
  vortex.write %v into %f : !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
  return
}

// -----

func.func @write_shape(%v: !vortex.vtensor<?x1x64xbf16, #vortex.format<ragged>>,
                       %f: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.write' op inner shapes must match: [?, 1, 64] vs [?, 1, 128]}}
  vortex.write %v into %f : !vortex.vtensor<?x1x64xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
  return
}

// -----

func.func @save_value(%v: !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>,
                      %f: !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.save' op value must be 'ragged', got 'batched'}}
  vortex.save %v into %f : !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>> into !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
  return
}

// -----

func.func @save_slotted(%v: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>,
                        %f: !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>) {
  // expected-error @+1 {{'vortex.save' op field must be 'paged', got 'slotted'}}
  vortex.save %v into %f : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>
  return
}

// -----

func.func @save_shape(%v: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>,
                      %f: !vortex.vtensor<?x1x2xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.save' op inner shapes must match: [?, 1, 1] vs [?, 1, 2]}}
  vortex.save %v into %f : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x2xbf16, #vortex.format<paged>>
  return
}

// -----

func.func @load_field(%f: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.load' op field must be 'paged', got 'ragged'}}
  %0 = vortex.load %f : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  return
}

// -----

func.func @load_result(%f: !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.load' op result must be 'ragged', got 'paged'}}
  %0 = vortex.load %f : !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>> -> !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
  return
}

// -----

func.func @load_shape(%f: !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.load' op inner shapes must match: [?, 1, 1] vs [?, 1, 2]}}
  %0 = vortex.load %f : !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>> -> !vortex.vtensor<?x1x2xbf16, #vortex.format<ragged>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Selections
//===----------------------------------------------------------------------===//

func.func @topk_score_shape(%s: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>,
                            %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.topk' op score must be [S, 1, 1], got [?, 1, 8]}}
  vortex.topk %s into %o : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @topk_score_format(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>,
                             %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.topk' op score must be 'ragged', got 'batched'}}
  vortex.topk %s into %o : !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>> into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @topk_output_format(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>,
                              %o: !vortex.vtensor<?x1x1xi32, #vortex.format<paged>>) {
  // expected-error @+1 {{'vortex.topk' op output must be 'ragged', got 'paged'}}
  vortex.topk %s into %o : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x1xi32, #vortex.format<paged>>
  return
}

// -----

func.func @approx_output_shape(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>,
                               %o: !vortex.vtensor<?x2x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.approx_topk' op output must be [S, 1, 1], got [?, 2, 1]}}
  vortex.approx_topk %s into %o : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x2x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @approx_ratio(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>,
                        %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.approx_topk' op tolerate_ratio must be in [0, 1], got 1.500000e+00}}
  vortex.approx_topk %s into %o {tolerate_ratio = 1.5 : f32} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @approx_ratio_negative(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>,
                                 %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.approx_topk' op tolerate_ratio must be in [0, 1], got -2.500000e-01}}
  vortex.approx_topk %s into %o {tolerate_ratio = -0.25 : f32} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @trtllm_k(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.trtllm_topk' op k must be positive, got 0}}
  %bt, %sl = vortex.trtllm_topk %s {k = 0 : i64} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
  return
}

// -----

func.func @trtllm_negative_k(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.trtllm_topk' op k must be positive, got -8}}
  %bt, %sl = vortex.trtllm_topk %s {k = -8 : i64} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
  return
}

// -----

func.func @trtllm_score(%s: !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.trtllm_topk' op score must be [S, 1, 1], got [?, 8, 1]}}
  %bt, %sl = vortex.trtllm_topk %s {k = 4 : i64} : !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
  return
}

// -----

func.func @trtllm_table(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.trtllm_topk' op block table must be 'ragged', got 'batched'}}
  %bt, %sl = vortex.trtllm_topk %s {k = 4 : i64} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
  return
}

// -----

func.func @trtllm_seqlens(%s: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.trtllm_topk' op seqlens must be 'batched', got 'ragged'}}
  %bt, %sl = vortex.trtllm_topk %s {k = 4 : i64} : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> -> !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @union_lhs_table(%bt: !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>,
                           %sl: !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>,
                           %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.union' op lhs block table must be 'ragged', got 'batched'}}
  vortex.union (%bt, %sl), (%bt, %sl) into %o : !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>> into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @union_lhs_seqlens(%bt: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>,
                             %sl: !vortex.vtensor<?x2x1xi32, #vortex.format<batched>>,
                             %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>) {
  // expected-error @+1 {{'vortex.union' op lhs seqlens must be [S, 1, 1], got [?, 2, 1]}}
  vortex.union (%bt, %sl), (%bt, %sl) into %o : !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>, !vortex.vtensor<?x2x1xi32, #vortex.format<batched>> into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
  return
}

// -----

func.func @union_output(%bt: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>,
                        %sl: !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>,
                        %o: !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>) {
  // expected-error @+1 {{'vortex.union' op output must be 'ragged', got 'batched'}}
  vortex.union (%bt, %sl), (%bt, %sl) into %o : !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xi32, #vortex.format<batched>> into !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
  return
}

// -----

// Tile bound (docs/contract.md "Bounds"): fuzzing found group_size = 65536
// taking 38 s and 2.2 GB in convert-vortex-to-gpu.
// expected-error @+1 {{group_size x head_dim and block_size x head_dim (padded to powers of two) must be at most 131072 elements, got group_size = 65536, block_size = 16, head_dim = 128}}
func.func @tile_group() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 65536, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// G = 1025 pads to 2048: 2048 x 128 = 262144.
// expected-error @+1 {{group_size = 1025, block_size = 16, head_dim = 128}}
func.func @tile_group_padded() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 1025, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{group_size = 8, block_size = 4096, head_dim = 64}}
func.func @tile_block() attributes {c = #vortex.config<block_size = 4096, page_size = 4096, head_dim = 64, group_size = 8, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// The largest tiles accepted: 1024 x 128 and 16 x 8192.
func.func private @tile_max() attributes {c = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 1024, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>, d = #vortex.config<block_size = 16, page_size = 16, head_dim = 8192, group_size = 16, topk_val = 29, topk_ratio = 0.0625, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>}

// -----

// expected-error @+1 {{vtensor [D0, D1] = [300, 512] must have at most 131072 elements (padded to powers of two)}}
func.func @tile_vtensor(%a: !vortex.vtensor<?x300x512xbf16, #vortex.format<ragged>>)

// -----

// A declaration's bound is a parameter's (2^24 elements padded); a cache
// field's tile bound is the flow's (invalid-flow.mlir).
// expected-error @+1 {{declaration 'c' [8192, 4096] must have at most 16777216 elements (padded to powers of two)}}
func.func @tile_field() attributes {f = #vortex.field<"c", 8192, 4096>}

// -----

// A parameter may exceed the tile (it is streamed), up to 2^24 elements.
func.func private @streamed_param(%a: !vortex.vtensor<1x4x65536xbf16, #vortex.format<parameter>>)

// -----

// expected-error @+1 {{vtensor [D0, D1] = [8192, 4096] must have at most 16777216 elements (padded to powers of two) as a parameter}}
func.func @param_too_big(%a: !vortex.vtensor<1x8192x4096xbf16, #vortex.format<parameter>>)
