//===- LinalgBuilder.h - Shared pieces of the linalg patterns ---*- C++ -*-===//
//
// What every vortex-to-linalg pattern shares: the flow's domain in a step
// function (found through markers the flow pattern leaves), the step state
// (fields and sparse outputs, threaded through their write-backs) and a
// builder of the generics the ops lower to.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOLINALG_LINALGBUILDER_H
#define VORTEX_LIB_CONVERSION_VORTEXTOLINALG_LINALGBUILDER_H

#include "Vortex/Conversion/Utils/ScalarBuilder.h"
#include "Vortex/Dialect/VortexOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>

namespace mlir::vortex::linalg_lowering {

/// Markers on step functions (removed by removeVortexToLinalgMarkers):
/// the flow config on the function, the role of each domain value on its
/// defining op, and the step argument a bound value stands for.
inline constexpr llvm::StringLiteral kConfigMarker = "vortex.config";
inline constexpr llvm::StringLiteral kDomainMarker = "vortex.domain";
inline constexpr llvm::StringLiteral kBindsMarker = "vortex.binds";
/// On the generic a packed int4 k or v is bound to (its whole pool
/// dequantized): the name of the pool. Reads of it unpack at the load site
/// (LinalgBuilder::maskedExtract), so the generic itself dies.
inline constexpr llvm::StringLiteral kInt4Marker = "vortex.int4";

/// Element (s, i, j) of a packed int4 pool: `packed` i8 [?, bs, D / 2],
/// `scale` f32 [?, 1, D] (per channel, `perToken` false) or [?, bs, 1];
/// 0 beyond (bs, D).
Value dequantInt4(OpBuilder &b, Location loc, Value packed, Value scale,
                  bool perToken, Value s, Value i, Value j);

/// Scalar helpers plus the tensor and loop ones of this lowering.
struct Emitter : ScalarBuilder {
  Emitter(OpBuilder &b, Location loc) : ScalarBuilder(b, loc) {}

  Value extract(Value t, ValueRange ivs);
  Value index(int64_t dim);
  Value dim(Value t, int64_t d);

  /// scf.for from lb to ub with loop-carried values.
  scf::ForOp
  forLoop(Value lb, Value ub, ValueRange inits,
          function_ref<SmallVector<Value>(Emitter &, Value, ValueRange)> body);

  /// scf.if yielding one value per branch.
  Value ifElse(Value cond, function_ref<Value(Emitter &)> thenFn,
               function_ref<Value(Emitter &)> elseFn);
};

/// The flow's domain inside a step function: the ragged extent and its
/// paged block ids; on the indexer side also the dense CSR, the number of
/// rows and each ragged position's row.
struct StepDomain {
  FlowConfigAttr config;
  Value raggedExtent, blockIds, indptr, rowOf, numRows;
  /// Cache steps of flows with slotted fields: the slot of each completed
  /// block (slot_of_ptr[block_ids[s]], i32; < 0 skips the block).
  Value slotIds;

  /// The domain of the step function holding `op`, if it is one.
  static std::optional<StepDomain> find(Operation *op);
};

/// Step state: a field or a sparse output of the step function, updated in
/// tensor form and written back once at the end.
BlockArgument stepArgument(func::FuncOp func, StringRef name);
/// The step argument that `bound` (a value the flow pattern bound to a flow
/// argument) stands for.
BlockArgument boundArgument(Value bound);
/// The argument's value at the start of the step (its to_tensor).
Value entryTensor(BlockArgument arg);
/// The argument's latest value: the source of its write-back, else its
/// value at the start of the step.
Value currentState(BlockArgument arg);
/// Makes `value` the argument's write-back.
void setState(RewriterBase &rewriter, BlockArgument arg, Value value);

/// The element type a vtensor is computed and stored in on the CPU path:
/// f32 for floats (the computation type), the integer type itself else.
Type loweredElementType(VTensorType t);

/// Replaces `op` by `values`, cast where a converted result type has a
/// static leading extent (a parameter's single row) the value does not.
void replaceOpWithConverted(ConversionPatternRewriter &rewriter,
                            const TypeConverter &converter, Operation *op,
                            ValueRange values);

/// Builds the generics of one op. Values are `tensor<? x D0 x D1 x f32>`
/// whose leading axis is their format's domain.
class LinalgBuilder {
public:
  LinalgBuilder(OpBuilder &b, Location loc, std::optional<StepDomain> domain,
                Value batchedLead);

  /// The builder for `op`, or failure when `op` reads or produces values
  /// addressed through a flow's block lists (or `needsFlow`) and is not in
  /// a step function.
  static FailureOr<LinalgBuilder> forOp(Operation *op, ValueRange operands,
                                        ConversionPatternRewriter &rewriter,
                                        bool needsFlow = false);

  OpBuilder &b;
  Emitter e;
  Location loc;
  std::optional<StepDomain> domain;

  FlowConfigAttr config() const { return domain->config; }

  /// Extent of inner axis `dim` as computed: padded once padding is
  /// explicit, else real.
  static int64_t computeExtent(VTensorType t, unsigned dim);
  /// Element (s, i, j) of `src`, or 0 where (i, j) lies beyond src's extent
  /// (the masked load of a padded lane).
  static Value maskedExtract(Emitter &x, Value src, Value s, Value i, Value j,
                             int64_t d0, int64_t d1);

  Value emptyTensor(Value lead, int64_t d0, int64_t d1);
  /// `acc[s, a, c] += lhs[lhsMap] * rhs[rhsMap]` over loops (s, a, c, t), t
  /// the reduction, into a [lead, d0, d1] f32 tensor from 0: the one
  /// contraction of gemm, gemv and the learned descriptor.
  Value contract(Value lhs, AffineMap lhsMap, Value rhs, AffineMap rhsMap,
                 Value lead, int64_t d0, int64_t d1);
  /// Leading extent of the domain of `format` (a parameter has one row).
  Value leadOf(Format format);

  /// `src` widened to inner extents (d0, d1), padded lanes 0.
  Value padTo(Value src, int64_t d0, int64_t d1);
  /// Rows of `src` gathered by the indices in `idx` (1-D, i32 or index), at
  /// inner extents (d0, d1) (src's when negative).
  Value gather(Value src, Value idx, int64_t d0 = -1, int64_t d1 = -1);
  /// The value to read `lowered` from: for a flow argument bound padded, the
  /// unpadded step argument (reads are masked, so the padded copy of a
  /// whole pool is never made).
  static Value readSource(Value lowered);
  /// `converted` (the lowering of `original`) in the domain of `format`, at
  /// its computed inner extents.
  Value operandIn(Value original, Value converted, Format format);
  /// Operand `i` of `op` in the format of op's first result.
  Value inOf(Operation *op, ValueRange operands, unsigned i);

  /// A parallel generic over the result's shape; `body` gets the scalars of
  /// the (broadcast) inputs.
  Value elementwise(VTensorType resultType, ArrayRef<Value> inputs,
                    function_ref<Value(Emitter &, ValueRange)> body);
  /// A generic with no inputs: `body` computes each element from its
  /// indices (s, i, j).
  Value generate(Value lead, int64_t d0, int64_t d1,
                 function_ref<Value(Emitter &, Value, Value, Value)> body);
  /// A keep-dim reduction over inner axis `dim` (1 or 2), grouped by
  /// `factor` consecutive elements (0 = the whole axis); means divide by
  /// `realCount`.
  Value reduceInner(Value input, VTensorType resultType, ReduceKind kind,
                    int64_t dim, int64_t factor, int64_t realCount);
  /// The first `extent` lanes of axis `dim`, zero-extended if shorter.
  Value sliceInner(Value input, int64_t dim, int64_t extent);

  /// Budget of a row of `n` blocks: max(topk + bos + eos, int(n * ratio)).
  Value budget(Emitter &x, Value n);
  /// Row bounds [start, end) of row r in the dense CSR.
  std::pair<Value, Value> rowBounds(Emitter &x, Value r);
  /// True iff row r needs selection (more blocks than its budget).
  Value rowNeedsSelection(Emitter &x, Value start, Value end);

  /// The scored range [lo, hi) of a row, and whether it needs selection.
  struct Segment {
    Value start, end, lo, hi, active;
  };
  Segment segmentOfRow(Emitter &x, Value row);
  /// Per-channel scan over the scored range of each row. Positions outside
  /// the range, and rows that need no selection, hold 0.
  Value segmentOp(VTensorType resultType,
                  function_ref<Value(Emitter &, Segment &, Value s, Value i,
                                     Value j)>
                      compute);
  /// Fold `fn` over positions [lo, hi) of channel (i, j) of `input`.
  Value foldSegment(Emitter &x, Value input, Value lo, Value hi, Value i,
                    Value j, Value init,
                    function_ref<Value(Emitter &, Value acc, Value v)> fn);
  /// Scatter rows of `value` into field tensor `field` at block ids, for the
  /// positions where `enabled(s)` holds.
  Value scatterRows(Value field, Value value, Value ids,
                    function_ref<Value(Emitter &, Value s)> enabled);

private:
  Value batchedLead;
};

/// A pattern that lowers `OpTy` with the LinalgBuilder of the op; it fails
/// to match where LinalgBuilder::forOp does (`NeedsFlow`: the op needs a
/// flow's domain whatever its formats).
template <typename OpTy, bool NeedsFlow = false>
struct OpToLinalgPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  virtual LogicalResult lower(OpTy op, OpAdaptor adaptor, LinalgBuilder &lb,
                              ConversionPatternRewriter &rewriter) const = 0;

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    FailureOr<LinalgBuilder> lb =
        LinalgBuilder::forOp(op, adaptor.getOperands(), rewriter, NeedsFlow);
    if (failed(lb))
      return failure();
    return lower(op, adaptor, *lb, rewriter);
  }
};

} // namespace mlir::vortex::linalg_lowering

#endif // VORTEX_LIB_CONVERSION_VORTEXTOLINALG_LINALGBUILDER_H
