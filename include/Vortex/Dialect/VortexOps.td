//===- VortexOps.td - Vortex op catalog ---------------------*- tablegen -*-===//
//
// The whole vortex_torch op catalog (indexer and cache side), the cache-side
// write-backs, and the flow op that holds a whole algorithm.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_VORTEXOPS_TD
#define VORTEX_DIALECT_VORTEXOPS_TD

include "Vortex/Dialect/VortexBase.td"
include "Vortex/Dialect/VortexTypes.td"
include "Vortex/Dialect/VortexInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Vortex_AnyVTensor : Type<CPred<"::llvm::isa<::mlir::vortex::VTensorType>($_self)">,
    "vtensor", "::mlir::vortex::VTensorType">;
def Vortex_FloatVTensor : Type<And<[Vortex_AnyVTensor.predicate,
    CPred<"::llvm::isa<::mlir::FloatType>(::llvm::cast<::mlir::vortex::VTensorType>($_self).getElementType())">]>,
    "vtensor of floating-point values", "::mlir::vortex::VTensorType">;
def Vortex_IndexVTensor : Type<And<[Vortex_AnyVTensor.predicate,
    CPred<"::llvm::cast<::mlir::vortex::VTensorType>($_self).getElementType().isSignlessInteger(32)">]>,
    "vtensor of i32 block ids", "::mlir::vortex::VTensorType">;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

class Vortex_Op<string mnemonic, list<Trait> traits = []>
    : Op<Vortex_Dialect, mnemonic, traits>;

/// A workload-fused op (Schedule.W).
class Vortex_WOp<string mnemonic, list<Trait> traits = []>
    : Vortex_Op<mnemonic, !listconcat(traits, [Vortex_ScheduledOpInterface])>;

/// An op whose schedule is computed in C++ (S ops and the dynamic cases).
class Vortex_SchedOp<string mnemonic, list<Trait> traits = []>
    : Vortex_Op<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<Vortex_ScheduledOpInterface, ["getSchedule"]>])>;

/// A standalone op (Schedule.S).
class Vortex_SOp<string mnemonic, list<Trait> traits = []>
    : Vortex_SchedOp<mnemonic, traits> {
  let extraClassDefinition = [{
    ::mlir::vortex::Schedule $cppClass::getSchedule() {
      return ::mlir::vortex::Schedule::S;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Vortex_GeMMOp : Vortex_SchedOp<"gemm", [Pure]> {
  let summary = "batched matrix product O = Y X^T per leading row";
  let description = [{
    vortex_torch `GeMM()(x, y)`: `O[s, a, b] = sum_k Y[s, a, k] * X[s, b, k]`
    with `x : [1 or S, Nx, K]`, `y : [S, Ny, K]` and result `[S, Ny, Nx]`.
    A batched `x` broadcasts over the blocks of its row, a `parameter`
    operand (`[1, N, K]`, one learned value shared by every row) over every
    row and block. The result is batched iff every operand is batched or a
    parameter and at least one is batched, else ragged. When `y` is a
    parameter (vortex_torch's `compute_param` path) the op is scheduled
    standalone, `x` must be batched and the result is batched `[B, Ny, Nx]`.

    `groups = G` (a parameter `y` only) contracts each of G row groups of
    `y` with the same group of `x` alone, vortex_torch's per-head weights
    (`FactorScore`'s `u_h = Wq[h]^T q_h`):
    `O[s, g Ny/G + a, b] = sum_k Y[g Ny/G + a, k] * X[s, g Nx/G + b, k]`,
    result `[B, Ny, Nx/G]`. It runs as the streamed GeMM does.

    ```mlir
    %s = vortex.gemm %q, %centroids
        : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
           !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>)
        -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$x, Vortex_FloatVTensor:$y,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$groups);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$x `,` $y attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// G of `groups` (1 when absent).
    int64_t getNumGroups() { return getGroups().value_or(1); }
    /// Whether the weight is read from memory as a stream, over the real
    /// k (a parameter over the tile bound, or any grouped GeMM), not held
    /// as a tile: MaskPadding leaves it, both back ends contract it alone.
    bool readsStreamedWeight();
  }];
}

def Vortex_GeMVOp : Vortex_WOp<"gemv", [Pure]> {
  let summary = "matrix-vector score O[s,0,0] = <Y[s,0,:], X[row(s),0,:]>";
  let description = [{
    vortex_torch `GeMV()(x, y)` (Gen-1 centroid routing): both operands have
    one row (`D0 == 1`) and equal `D1`; the result is `[S, 1, 1]`, batched
    iff both operands are batched or parameters and one is batched.

    ```mlir
    %s = vortex.gemv %qm, %c
        : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>,
           !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>)
        -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$x, Vortex_FloatVTensor:$y);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$x `,` $y attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Vortex_ReduceOp<string mnemonic, string kind, string math>
    : Vortex_SchedOp<mnemonic, [Pure, Vortex_ReductionOpInterface]> {
  let summary = "keep-dim " # kind # " reduction over dim 0, 1 or 2";
  let description = [{
    vortex_torch `}] # kind # [{(dim)`: }] # math # [{. The reduced axis keeps
    size 1. Over `dim = 1` or `2` the op is workload-fused and the result is
    batched iff the input is (ragged for a `parameter` input). Over
    `dim = 0` it reduces each (request, KV
    head) row segment `[bos, n - eos)` of a ragged input to one batched row
    and is scheduled standalone.

    ```mlir
    %r = vortex.}] # mnemonic # [{ %x {dim = 1 : i64}
        : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input, I64Attr:$dim);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::vortex::ReduceKind getReduceKind() {
      return ::mlir::vortex::ReduceKind::}] # kind # [{;
    }
  }];
  let extraClassDefinition = [{
    ::mlir::vortex::Schedule $cppClass::getSchedule() {
      return getDim() == 0 ? ::mlir::vortex::Schedule::S
                           : ::mlir::vortex::Schedule::W;
    }
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mlir::vortex::detail::verifyReduceOp(getOperation(), getDim());
    }
  }];
}

def Vortex_MaxOp : Vortex_ReduceOp<"max", "Max", "the maximum along `dim`">;
def Vortex_MinOp : Vortex_ReduceOp<"min", "Min", "the minimum along `dim`">;
def Vortex_MeanOp : Vortex_ReduceOp<"mean", "Mean",
    "the sum along `dim` divided by the real (unpadded) extent">;
def Vortex_SumOp : Vortex_ReduceOp<"sum", "Sum", "the sum along `dim`">;
def Vortex_L2NormOp : Vortex_ReduceOp<"l2norm", "L2Norm",
    "`sqrt(sum x^2)` along `dim` (a norm, not an RMS)">;

class Vortex_InterleaveOp<string mnemonic, string kind>
    : Vortex_WOp<mnemonic, [Pure, DeclareOpInterfaceMethods<
        Vortex_ReductionOpInterface, ["getGroupFactor"]>]> {
  let summary = "cache-side " # kind # " over consecutive groups of `factor`";
  let description = [{
    vortex_torch cache `}] # kind # [{Interleave(dim, k)`: folds each run of
    `factor` consecutive entries along `dim` (1 or 2) into one,
    `Y[m] = reduce_{j < k} X[m * k + j]`; the extent along `dim` must be a
    multiple of `factor` and becomes `extent / factor`.

    ```mlir
    %r = vortex.}] # mnemonic # [{ %k {dim = 1 : i64, factor = 16 : i64}
        : !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>
        -> !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input, I64Attr:$dim, I64Attr:$factor);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::vortex::ReduceKind $cppClass::getReduceKind() {
      return ::mlir::vortex::ReduceKind::}] # kind # [{;
    }
    int64_t $cppClass::getGroupFactor() { return getFactor(); }
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mlir::vortex::detail::verifyInterleaveOp(getOperation(),
                                                        getDim(), getFactor());
    }
  }];
}

def Vortex_MaxInterleaveOp : Vortex_InterleaveOp<"max_interleave", "Max">;
def Vortex_MinInterleaveOp : Vortex_InterleaveOp<"min_interleave", "Min">;
def Vortex_MeanInterleaveOp : Vortex_InterleaveOp<"mean_interleave", "Mean">;
def Vortex_L2NormInterleaveOp : Vortex_InterleaveOp<"l2norm_interleave", "L2Norm">;

//===----------------------------------------------------------------------===//
// Row-segment (scan) ops over dim 0: standalone
//===----------------------------------------------------------------------===//

def Vortex_SoftmaxOp : Vortex_SOp<"softmax", [Pure]> {
  let summary = "softmax over the blocks of each row, per channel";
  let description = [{
    vortex_torch `Softmax(dim=0, scale)`: for each (request, KV head) row and
    each channel, `exp(scale * x) / sum_segment exp(scale * x)` over the
    scored range `[bos, n - eos)`. Ragged in, ragged out, same shape.

    ```mlir
    %p = vortex.softmax %s {scale = 9.000000e-02 : f32}
        : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$dim,
                       DefaultValuedAttr<F32Attr, "1.0">:$scale);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Vortex_NormalizeOp : Vortex_SOp<"normalize", [Pure]> {
  let summary = "L2 normalization over the blocks of each row, per channel";
  let description = [{
    vortex_torch `Normalize(dim=0)`: `x / max(sqrt(sum_segment x^2), 1e-12)`
    per row segment and channel (the code's L2 semantics, not the tutorial's
    sum-to-one). Ragged in, ragged out, same shape.

    ```mlir
    %n = vortex.normalize %s
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$dim);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Vortex_Conv1dOp : Vortex_SOp<"conv1d", [Pure]> {
  let summary = "causal depthwise convolution over the blocks of each row";
  let description = [{
    vortex_torch `Conv1d(weight, dim=0)`: `Y[s] = sum_{k < K} W[k] * X[s - k]`
    within each row segment (zero before the segment start); `weight` is a
    `[K, D0, D1]` constant whose inner dims equal the input's.

    ```mlir
    %y = vortex.conv1d %s {weight = dense<[[[0.5]], [[0.5]]]> : tensor<2x1x1xf32>}
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input,
                       FloatElementsAttr<32>:$weight,
                       DefaultValuedAttr<I64Attr, "0">:$dim);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

def Vortex_TransposeOp : Vortex_WOp<"transpose", [Pure]> {
  let summary = "swap the two inner axes";
  let description = [{
    vortex_torch `Transpose()`: `Y[s, d1, d0] = X[s, d0, d1]`.

    ```mlir
    %t = vortex.transpose %s
        : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Vortex_ReshapeOp : Vortex_SchedOp<"reshape", [Pure]> {
  let summary = "row-major reshape of the inner axes";
  let description = [{
    vortex_torch `Reshape(-1, x2, y2)`: `[S, x1, y1] -> [S, x2, y2]` with
    `x1 * y1 == x2 * y2`, row-major. Workload-fused unless the input or the
    result needs padding, in which case vortex_torch runs it standalone over
    the real region.

    ```mlir
    %r = vortex.reshape %s
        : !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x2x4xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Vortex_KronOp : Vortex_WOp<"kron", [Pure]> {
  let summary = "Kronecker product along inner axes, broadcast on the others";
  let description = [{
    vortex_torch `Kron(dim)`: along each axis `a` in `dims` (a subset of
    {1, 2}), `O[..., i * y_a + j, ...] = X[..., i, ...] * Y[..., j, ...]` and
    the extent is `x_a * y_a`; the other inner axis broadcasts (equal or 1).

    ```mlir
    %m = vortex.kron %q, %max {dims = array<i64: 1>}
        : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
           !vortex.vtensor<?x4x128xbf16, #vortex.format<paged>>)
        -> !vortex.vtensor<?x32x128xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$lhs, Vortex_FloatVTensor:$rhs,
                       DenseI64ArrayAttr:$dims);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops (broadcasting inner axes)
//===----------------------------------------------------------------------===//

class Vortex_BinaryOp<string mnemonic, string kind, string math,
                      dag extraArgs = (ins)>
    : Vortex_WOp<mnemonic, [Pure, Vortex_BinaryElementwiseOpInterface]> {
  let summary = "elementwise " # math;
  let description = [{
    vortex_torch `}] # kind # [{`: }] # math # [{. Inner axes broadcast (each
    pair equal, or one of them 1); the result is batched iff both operands
    are batched or parameters and one is batched, else ragged (a batched
    operand broadcasts over its row's blocks, a parameter over every row).

    ```mlir
    %z = vortex.}] # mnemonic # [{ %x, %y
        : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
           !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>)
        -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = !con((ins Vortex_FloatVTensor:$lhs, Vortex_FloatVTensor:$rhs),
                       extraArgs);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    ::mlir::vortex::BinaryKind getBinaryKind() {
      return ::mlir::vortex::BinaryKind::}] # kind # [{;
    }
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mlir::vortex::detail::verifyBroadcastingBinaryOp(getOperation());
    }
  }];
  let hasVerifier = 1;
}

def Vortex_MaximumOp : Vortex_BinaryOp<"maximum", "Maximum", "max(x, y)">;
def Vortex_MinimumOp : Vortex_BinaryOp<"minimum", "Minimum", "min(x, y)">;
def Vortex_MultiplyOp : Vortex_BinaryOp<"multiply", "Mul", "x * y">;
def Vortex_AddOp : Vortex_BinaryOp<"add", "Add", "alpha * x + beta * y",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha,
         DefaultValuedAttr<F32Attr, "1.0">:$beta)>;

class Vortex_WhereOp<string mnemonic, string kind, string pred, string rel>
    : Vortex_BinaryOp<mnemonic, kind,
        "additive mask: 0 where x " # rel # " y, else -inf (-1e30)"> {
  let extraClassDeclaration = [{
    ::mlir::vortex::BinaryKind getBinaryKind() {
      return ::mlir::vortex::BinaryKind::}] # kind # [{;
    }
    static ::mlir::vortex::WherePredicate getPredicate() {
      return ::mlir::vortex::WherePredicate::}] # pred # [{;
    }
  }];
}

def Vortex_WhereEqualOp : Vortex_WhereOp<"where_eq", "WhereEqual", "Equal", "==">;
def Vortex_WhereNotEqualOp : Vortex_WhereOp<"where_ne", "WhereNotEqual", "NotEqual", "!=">;
def Vortex_WhereGreaterOp : Vortex_WhereOp<"where_gt", "WhereGreater", "Greater", ">">;
def Vortex_WhereGreaterEqualOp
    : Vortex_WhereOp<"where_ge", "WhereGreaterEqual", "GreaterEqual", ">=">;
def Vortex_WhereLessOp : Vortex_WhereOp<"where_lt", "WhereLess", "Less", "<">;
def Vortex_WhereLessEqualOp
    : Vortex_WhereOp<"where_le", "WhereLessEqual", "LessEqual", "<=">;

//===----------------------------------------------------------------------===//
// Unary elementwise ops with (alpha, beta)
//===----------------------------------------------------------------------===//

class Vortex_UnaryOp<string mnemonic, string kind, string math,
                     string alpha, string beta>
    : Vortex_WOp<mnemonic, [Pure, Vortex_UnaryElementwiseOpInterface]> {
  let summary = "elementwise " # math;
  let description = [{
    vortex_torch `}] # kind # [{(alpha=}] # alpha # [{, beta=}] # beta # [{)`:
    `y = }] # math # [{`. Same shape; batched iff the input is (a
    `parameter` input gives a ragged result: every position holds it).

    ```mlir
    %y = vortex.}] # mnemonic # [{ %x {alpha = 0.000000e+00 : f32}
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input,
                       DefaultValuedAttr<F32Attr, alpha>:$alpha,
                       DefaultValuedAttr<F32Attr, beta>:$beta);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let extraClassDeclaration = [{
    ::mlir::vortex::UnaryKind getUnaryKind() {
      return ::mlir::vortex::UnaryKind::}] # kind # [{;
    }
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mlir::vortex::detail::verifySameShapeOp(getOperation());
    }
  }];
  let hasVerifier = 1;
}

def Vortex_ReluOp : Vortex_UnaryOp<"relu", "Relu", "x >= alpha ? x : beta", "0.0", "0.0">;
def Vortex_SigmoidOp : Vortex_UnaryOp<"sigmoid", "Sigmoid",
    "1 / (1 + exp(beta * x + alpha))", "0.0", "0.0">;
def Vortex_SiluOp : Vortex_UnaryOp<"silu", "Silu",
    "x / (1 + exp(beta * x + alpha))", "0.0", "0.0">;
def Vortex_AbsOp : Vortex_UnaryOp<"abs", "Abs", "|beta * x + alpha|", "0.0", "1.0">;
def Vortex_AddMulOp : Vortex_UnaryOp<"add_mul", "AddMul", "beta * x + alpha", "0.0", "1.0">;
def Vortex_LogOp : Vortex_UnaryOp<"log", "Log", "log(beta * x + alpha)", "0.0", "1.0">;
def Vortex_ExpOp : Vortex_UnaryOp<"exp", "Exp", "exp(beta * x + alpha)", "0.0", "1.0">;

//===----------------------------------------------------------------------===//
// Positional constants
//===----------------------------------------------------------------------===//

def Vortex_MaskSliceOp : Vortex_WOp<"mask_slice", [Pure]> {
  let summary = "positional mask: alpha inside [start, end) along dim, beta outside";
  let description = [{
    vortex_torch `MaskSlice(start, end, dim, alpha, beta)`: a tile of the
    input's shape holding `alpha` at positions `[start, end)` along `dim`
    (1 or 2) and `beta` elsewhere. The input's values are not read; it only
    gives the shape and keeps the op in its producer's kernel.
    `0 <= start <= end <= extent(dim)`.

    ```mlir
    %m = vortex.mask_slice %s {start = 0 : i64, end = 8 : i64, dim = 2 : i64,
                               alpha = 0.000000e+00 : f32, beta = 1.000000e+00 : f32}
        : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input, I64Attr:$start, I64Attr:$end,
                       I64Attr:$dim,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.0">:$beta);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Cache fields: fill, write-back, save and load
//===----------------------------------------------------------------------===//

def Vortex_FillOp : Vortex_WOp<"fill"> {
  let summary = "cache side: set a field of each completed block to a constant";
  let description = [{
    vortex_torch cache `Fill(alpha)`: `F[block] = value` for the block that
    just completed (pages are recycled without clearing, so stateful flows
    zero their state here). The field must be paged or slotted.

    ```mlir
    vortex.fill %running_score {value = 0.000000e+00 : f32}
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
    ```
  }];
  let arguments = (ins Arg<Vortex_FloatVTensor, "the field", [MemWrite]>:$field,
                       DefaultValuedAttr<F32Attr, "0.0">:$value);
  let assemblyFormat = "$field attr-dict `:` type($field)";
  let hasVerifier = 1;
}

def Vortex_WriteOp : Vortex_WOp<"write"> {
  let summary = "cache side: write a per-block value into a field";
  let description = [{
    The write-back of a cache op whose `output` is a field (vortex_torch
    `CMean(dim=1)(k, cache["centroids"])`): the ragged per-block value is
    stored into the paged (or slotted) field row of the completed block.
    Inner shapes must match.

    ```mlir
    vortex.write %c into %centroids
        : !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
        into !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$value,
                       Arg<Vortex_FloatVTensor, "the field", [MemWrite]>:$field);
  let assemblyFormat = "$value `into` $field attr-dict `:` type($value) `into` type($field)";
  let hasVerifier = 1;
}

def Vortex_LearnedDescriptorOp : Vortex_SOp<"learned_descriptor"> {
  let summary = "cache side: learned per-head block descriptors into a field";
  let description = [{
    vortex_torch's `LearnedDescriptor(Wt, Wk, H, m, r)(x, F)`: for each
    completed block `x [bs, d]` (a k, v or latent pool of the cache body),
    `F[block, h m + j, i] = sum_e (sum_t mix[h m + j, t] x[t, e]) *
    proj[h r + i, e]`: the tokens mixed into `m` landmarks per head
    (`mix [H m, bs]`, `mix[h m + j, t] = Wt[h, t, j]`), each compressed by
    its head's channel weight (`proj [H r, d]`, `proj[h r + i, e] =
    Wk[h, e, i]`). `heads = H`; `m` and `r` follow from the parameters. The
    field is paged `[H m, r]`.

    Standalone (schedule S, as in vortex_torch): its own kernel per block,
    which reads `proj` from memory, so `proj` may be a streamed parameter
    (docs/contract.md, "Bounds").

    ```mlir
    vortex.learned_descriptor %k, %descriptor_mix, %descriptor_proj
        into %descriptors {heads = 8 : i64}
        : !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>,
          !vortex.vtensor<1x16x16xbf16, #vortex.format<parameter>>,
          !vortex.vtensor<1x64x128xbf16, #vortex.format<parameter>>
          into !vortex.vtensor<?x16x8xbf16, #vortex.format<paged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$block, Vortex_FloatVTensor:$mix,
                       Vortex_FloatVTensor:$proj,
                       Arg<Vortex_FloatVTensor, "the field", [MemWrite]>:$field,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$heads);
  let assemblyFormat = [{
    $block `,` $mix `,` $proj `into` $field attr-dict `:` type($block) `,`
    type($mix) `,` type($proj) `into` type($field)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Landmarks per head (m) and compressed channels (r).
    int64_t getLandmarks();
    int64_t getRank();
  }];
}

def Vortex_SaveOp : Vortex_WOp<"save"> {
  let summary = "indexer side: store per-block state into a field (in place)";
  let description = [{
    vortex_torch `Save()(x, F)`: `F[block] = x[block]` for every scored block,
    in place. It has a memory write effect on the field so canonicalization
    and DCE keep it. A `vortex.load` of the same field in the same step reads
    the value the field had before the step (the previous step's save): every
    load of a field is ordered before its saves. `x` is ragged, the field is
    paged and the inner shapes match. Flows using save need the radix cache
    disabled.

    ```mlir
    vortex.save %running into %running_score
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
        into !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$value,
                       Arg<Vortex_FloatVTensor, "the field", [MemWrite]>:$field);
  let assemblyFormat = "$value `into` $field attr-dict `:` type($value) `into` type($field)";
  let hasVerifier = 1;
}

def Vortex_LoadOp : Vortex_WOp<"load"> {
  let summary = "indexer side: read a field as a per-block ragged tensor";
  let description = [{
    vortex_torch `Load()(F)`: the paged field gathered in ragged order (the
    value at the start of the step). Paged in, ragged out, same inner shape.

    ```mlir
    %last = vortex.load %running_score
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
        -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Arg<Vortex_FloatVTensor, "the field", [MemRead]>:$field);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$field attr-dict `:` type($field) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Output functions (terminal selection)
//===----------------------------------------------------------------------===//

def Vortex_TopKOp : Vortex_SOp<"topk"> {
  let summary = "exact per-row block selection (BOS, top-k of the middle, EOS)";
  let description = [{
    vortex_torch `topK()(score, o)`: for each (request, KV head) row of `n`
    blocks with budget `B = max(topk_val + bos + eos, int(n * topk_ratio))`,
    rows with `n <= B` keep every block; otherwise the row keeps its first
    `bos` and last `eos` blocks and the `B - bos - eos` best-scored blocks of
    `[bos, n - eos)` (ties to the lower position), written to `o` (the sparse
    block-id list). `score` is ragged `[S, 1, 1]`; `o` is ragged `i32`.

    ```mlir
    vortex.topk %score into %o
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
        into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$score,
                       Arg<Vortex_IndexVTensor, "the sparse indices", [MemWrite]>:$output);
  let assemblyFormat = "$score `into` $output attr-dict `:` type($score) `into` type($output)";
  let hasVerifier = 1;
}

def Vortex_ApproxTopKOp : Vortex_SOp<"approx_topk"> {
  let summary = "approximate per-row block selection (adaptive radix select)";
  let description = [{
    vortex_torch `approxTopK(tolerate_ratio)`: like `vortex.topk` but the
    radix select may stop once at most `tolerate_ratio * k` candidates remain
    undecided (recall >= 1 - tolerate_ratio); the output is unsorted.
    `tolerate_ratio` is in [0, 1]; 0 is exact.

    ```mlir
    vortex.approx_topk %score into %o {tolerate_ratio = 1.000000e-01 : f32}
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
        into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$score,
                       Arg<Vortex_IndexVTensor, "the sparse indices", [MemWrite]>:$output,
                       DefaultValuedAttr<F32Attr, "0.0">:$tolerate_ratio);
  let assemblyFormat = "$score `into` $output attr-dict `:` type($score) `into` type($output)";
  let hasVerifier = 1;
}

def Vortex_TrtllmTopKOp : Vortex_SOp<"trtllm_topk", [Pure]> {
  let summary = "trtllm-style TopK(k): a block table and sequence lengths";
  let description = [{
    vortex_torch `TopK(k)` (trtllm backend): per row, if `n <= bos + k + eos`
    the dense row is copied; else the first `bos` blocks, the top `k` of
    `[bos, n - eos)` and the last `eos`. Returns the block table (ragged
    `i32 [S, 1, 1]`) and the per-row token counts (batched `i32 [B, 1, 1]`,
    `(bos + k + eos - 1) * block_size + last_block_len`).

    ```mlir
    %bt, %sl = vortex.trtllm_topk %score {k = 64 : i64}
        : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
        -> !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>,
           !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$score, I64Attr:$k);
  let results = (outs Vortex_IndexVTensor:$block_table, Vortex_IndexVTensor:$seqlens);
  let assemblyFormat = "$score attr-dict `:` type($score) `->` type($block_table) `,` type($seqlens)";
  let hasVerifier = 1;
}

def Vortex_UnionOp : Vortex_SOp<"union", [
    AllTypesMatch<["lhs_table", "rhs_table"]>,
    AllTypesMatch<["lhs_seqlens", "rhs_seqlens"]>]> {
  let summary = "trtllm: per-row deduplicated union of two block selections";
  let description = [{
    vortex_torch `Union()((bt0, sl0), (bt1, sl1), o)`: per row, the
    deduplicated union of two `vortex.trtllm_topk` selections with the true
    last block pinned at the tail, written to `o`. A terminal op.

    ```mlir
    vortex.union (%bt0, %sl0), (%bt1, %sl1) into %o
        : !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>,
          !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
        into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_IndexVTensor:$lhs_table, Vortex_IndexVTensor:$lhs_seqlens,
                       Vortex_IndexVTensor:$rhs_table, Vortex_IndexVTensor:$rhs_seqlens,
                       Arg<Vortex_IndexVTensor, "the sparse indices", [MemWrite]>:$output);
  let assemblyFormat = [{
    `(` $lhs_table `,` $lhs_seqlens `)` `,` `(` $rhs_table `,` $rhs_seqlens `)`
    `into` $output attr-dict `:` type($lhs_table) `,` type($lhs_seqlens)
    `into` type($output)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Custom ops (the escape hatch)
//===----------------------------------------------------------------------===//

def Vortex_CustomCallOp : Vortex_SOp<"custom_call"> {
  let summary = "an opaque call of a torch function registered by name";
  let description = [{
    vortex_torch's custom-op registry: a standalone (Schedule.S) op whose
    body is a torch function registered in Python
    (`vortex.register_op(name, fn, shape_rule)`, docs/python.md). The
    compiler knows only what the registration declared: the operands and
    the result's shape, format and dtype (the shape rule's answer, written
    by the tracer). Indexer side only: the cache step runs kernels per
    completed block, with no place for a host call. Operands and the
    result are RAGGED (one entry per CSR position) or BATCHED (one per row)
    float values.

    ```mlir
    %n = vortex.custom_call "score_norm"(%s)
        : (!vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>)
        -> !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins StrAttr:$callee, Variadic<Vortex_FloatVTensor>:$inputs);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = [{
    $callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Flows
//===----------------------------------------------------------------------===//

def Vortex_FlowOp : Vortex_Op<"flow", [
    Symbol, IsolatedFromAbove, NoTerminator, SingleBlock,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "a whole sparse-attention flow: config, fields, cache and indexer";
  let description = [{
    One vortex_torch `vFlow`. `config` holds the knobs, `fields` the cache
    fields of `create_cache` with their `[r, c]` shapes (`k` and `v` are
    implicit), the optional `params` the learned, batch-shared weights
    (vortex_torch `Parameter`) with their `[r, c]` shapes. The `cache` region
    is `forward_cache`: it runs on each completed KV block; its arguments are
    `k`, `v` (paged `[?, block_size, head_dim]` of `kv_dtype`), the declared
    fields (paged `[?, r, c]` of `intermediate_dtype`) and the parameters
    (`parameter` `[1, r, c]` of `intermediate_dtype`: one value shared by
    every row and block). The `indexer` region is `forward_indexer`: it runs
    each decode step; its arguments are `q` (batched
    `[?, group_size, head_dim]`), `o` (the ragged `i32` sparse block list),
    `k`, `v`, the fields and the parameters. The indexer ends in exactly one
    terminal selection (`vortex.topk`, `vortex.approx_topk` or
    `vortex.union`); every declared field is written on the cache side or
    saved by the indexer. Parameters are read-only in both steps (bound at
    run time, like fields); without parameters `params(...)` is not printed.

    ```mlir
    vortex.flow @block_sparse_attention
        config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
            group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
            reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
            kv_dtype = bf16>
        fields(centroids = [1, 128])
    cache(%k: !kv, %v: !kv, %centroids: !c) {
      %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
      vortex.write %m into %centroids : !cr into !c
    }
    indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
      %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
      %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
      vortex.topk %s into %o : !s into !o
    }
    ```

    A learned query: the parameter `w` (`!w = !vortex.vtensor<1x1x128xbf16,
    #vortex.format<parameter>>`) scales the mean query of every row.

    ```mlir
    vortex.flow @learned_query config = #vortex.config<...>
        fields(centroids = [1, 128]) params(w = [1, 128])
    cache(%k: !kv, %v: !kv, %centroids: !c, %w: !w) { ... }
    indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %w: !w) {
      %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
      %qw = vortex.multiply %qm, %w : (!qm, !w) -> !qm
      %s = vortex.gemm %qw, %centroids : (!qm, !c) -> !s
      vortex.topk %s into %o : !s into !o
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Vortex_FlowConfigAttr:$config,
                       TypedArrayAttrBase<Vortex_FieldAttr, "cache fields">:$fields,
                       OptionalAttr<TypedArrayAttrBase<Vortex_FieldAttr,
                           "learned parameters">>:$params);
  let regions = (region SizedRegion<1>:$cache, SizedRegion<1>:$indexer);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// Names of the cache tensors in ABI order: "k", "v", then the fields.
    ::llvm::SmallVector<::llvm::StringRef> getCacheTensorNames();
    /// The declared parameters (`params(...)`), in declaration order.
    ::llvm::SmallVector<FieldAttr> getParamDecls();
    /// Names of the parameters in declaration order (they follow the
    /// fields in both bodies and in both steps' arguments).
    ::llvm::SmallVector<::llvm::StringRef> getParamNames();
    /// The name of a body argument: "q", "o", a cache tensor or a
    /// parameter; empty for another value.
    ::llvm::StringRef getArgumentName(::mlir::Value value);
    /// The types the region arguments must have under this config.
    ::mlir::vortex::VTensorType getKVType();
    /// q's type for `tokens` query tokens per row: [?, tokens x G, D].
    ::mlir::vortex::VTensorType getQueryType(::mlir::Type elementType,
                                             int64_t tokens = 1);
    /// T, the query tokens per row (q's D0 over the group size).
    int64_t getQueryTokens();
    ::mlir::vortex::VTensorType getOutputType();
    ::mlir::vortex::VTensorType getFieldType(FieldAttr field);
    /// `[1, r, c]` of the intermediate dtype, format `parameter`.
    ::mlir::vortex::VTensorType getParamType(FieldAttr param);
    ::mlir::Block &getCacheBody() { return getCache().front(); }
    ::mlir::Block &getIndexerBody() { return getIndexer().front(); }
    /// The terminal selection op of the indexer, or null.
    ::mlir::Operation *getSelectionOp();
  }];
}

include "Vortex/Dialect/VortexStructureOps.td"
include "Vortex/Dialect/VortexAttentionOps.td"

#endif // VORTEX_DIALECT_VORTEXOPS_TD
