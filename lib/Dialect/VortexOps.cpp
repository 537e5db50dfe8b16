//===- VortexOps.cpp - Vortex op verifiers --------------------------------===//
//
// The verifiers enforce what vortex_torch asserts at trace time: ranks and
// inner-shape rules, broadcasting, the per-op format tables and the
// output-format rule of workload-fused ops. The flow op is in FlowOp.cpp.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::vortex;

#include "Vortex/Dialect/VortexInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "Vortex/Dialect/VortexOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

static VTensorType vt(Value v) { return cast<VTensorType>(v.getType()); }

static StringRef fmtName(Format f) { return stringifyFormat(f); }

static std::string shapeStr(VTensorType t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(t.getShape(), os, [&](int64_t d) {
    if (d == ShapedType::kDynamic)
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

/// The result's leading extent is `?` unless every input has the same static
/// one.
static LogicalResult verifyLeading(Operation *op, ArrayRef<VTensorType> ins,
                                   VTensorType out) {
  if (out.getL() == ShapedType::kDynamic)
    return success();
  for (VTensorType in : ins)
    if (in.getL() != out.getL())
      return op->emitOpError("static leading extent ")
             << out.getL() << " of the result does not match input "
             << shapeStr(in) << "; use '?'";
  return success();
}

/// The output-format rule of workload-fused ops (which read batched rows,
/// ragged intermediates, paged and slotted fields and parameters directly):
/// batched iff every input is batched or a parameter and at least one is
/// batched, else ragged.
static LogicalResult verifyWorkloadResult(Operation *op,
                                          ArrayRef<VTensorType> ins,
                                          VTensorType out) {
  SmallVector<Format> formats;
  for (VTensorType t : ins)
    formats.push_back(t.getFormatKind());
  Format expected = inferWorkloadFormat(formats);
  if (out.getFormatKind() != expected) {
    auto diag = op->emitOpError("result format must be '")
                << fmtName(expected) << "' (batched iff every input is ";
    if (llvm::is_contained(formats, Format::Parameter))
      diag << "batched or a parameter and at least one is batched";
    else
      diag << "batched";
    return diag << ", else ragged), got '" << fmtName(out.getFormatKind())
                << "'";
  }
  return verifyLeading(op, ins, out);
}

static LogicalResult expectInner(Operation *op, VTensorType out, int64_t d0,
                                 int64_t d1) {
  if (out.getD0() != d0 || out.getD1() != d1)
    return op->emitOpError("result inner shape must be [")
           << d0 << ", " << d1 << "], got [" << out.getD0() << ", "
           << out.getD1() << "]";
  return success();
}

/// Broadcast two inner extents (equal, or one of them 1).
static FailureOr<int64_t> broadcastExtent(int64_t a, int64_t b) {
  if (a == b || b == 1)
    return a;
  if (a == 1)
    return b;
  return failure();
}

//===----------------------------------------------------------------------===//
// Class verifiers
//===----------------------------------------------------------------------===//

LogicalResult mlir::vortex::detail::verifyReduceOp(Operation *op, int64_t dim) {
  VTensorType in = vt(op->getOperand(0)), out = vt(op->getResult(0));
  if (dim < 0 || dim > 2)
    return op->emitOpError("dim must be 0, 1 or 2, got ") << dim;
  if (dim == 0) {
    if (!in.isRagged())
      return op->emitOpError("reduction over dim 0 requires a 'ragged' "
                             "input, got '")
             << fmtName(in.getFormatKind()) << "'";
    if (!out.isBatched())
      return op->emitOpError("reduction over dim 0 produces a 'batched' "
                             "result, got '")
             << fmtName(out.getFormatKind()) << "'";
    return expectInner(op, out, in.getD0(), in.getD1());
  }
  if (failed(verifyWorkloadResult(op, {in}, out)))
    return failure();
  return dim == 1 ? expectInner(op, out, 1, in.getD1())
                  : expectInner(op, out, in.getD0(), 1);
}

LogicalResult mlir::vortex::detail::verifyInterleaveOp(Operation *op,
                                                       int64_t dim,
                                                       int64_t factor) {
  VTensorType in = vt(op->getOperand(0)), out = vt(op->getResult(0));
  if (dim != 1 && dim != 2)
    return op->emitOpError("dim must be 1 or 2, got ") << dim;
  if (factor <= 0)
    return op->emitOpError("factor must be positive, got ") << factor;
  int64_t extent = in.getInner(dim);
  if (extent % factor != 0)
    return op->emitOpError("extent ")
           << extent << " along dim " << dim
           << " is not a multiple of the factor " << factor;
  if (failed(verifyWorkloadResult(op, {in}, out)))
    return failure();
  return dim == 1 ? expectInner(op, out, extent / factor, in.getD1())
                  : expectInner(op, out, in.getD0(), extent / factor);
}

LogicalResult mlir::vortex::detail::verifyBroadcastingBinaryOp(Operation *op) {
  VTensorType x = vt(op->getOperand(0)), y = vt(op->getOperand(1));
  VTensorType out = vt(op->getResult(0));
  FailureOr<int64_t> d0 = broadcastExtent(x.getD0(), y.getD0());
  FailureOr<int64_t> d1 = broadcastExtent(x.getD1(), y.getD1());
  if (failed(d0) || failed(d1))
    return op->emitOpError("inner shapes ")
           << shapeStr(x) << " and " << shapeStr(y)
           << " do not broadcast (each pair must be equal or 1)";
  if (failed(verifyWorkloadResult(op, {x, y}, out)))
    return failure();
  return expectInner(op, out, *d0, *d1);
}

LogicalResult mlir::vortex::detail::verifySameShapeOp(Operation *op) {
  VTensorType in = vt(op->getOperand(0)), out = vt(op->getResult(0));
  if (failed(verifyWorkloadResult(op, {in}, out)))
    return failure();
  return expectInner(op, out, in.getD0(), in.getD1());
}

//===----------------------------------------------------------------------===//
// GeMM / GeMV
//===----------------------------------------------------------------------===//

Schedule GeMMOp::getSchedule() {
  return vt(getY()).isParameter() ? Schedule::S : Schedule::W;
}

LogicalResult GeMMOp::verify() {
  VTensorType x = vt(getX()), y = vt(getY()), out = vt(getResult());
  if (x.getD1() != y.getD1())
    return emitOpError("contraction extents differ: x is ")
           << shapeStr(x) << ", y is " << shapeStr(y)
           << " (GeMM(x, y) = y x^T needs equal last extents)";
  // A parameter y is vortex_torch's compute_param path (standalone, batched
  // x, batched result); a parameter x broadcasts like a batched row.
  int64_t groups = getNumGroups();
  if (groups > 1) {
    if (!y.isParameter())
      return emitOpError("groups = ")
             << groups << " requires a 'parameter' weight y (per-group "
             << "weights run on the standalone parameter path), got '"
             << fmtName(y.getFormatKind()) << "'";
    if (x.getD0() % groups || y.getD0() % groups)
      return emitOpError("groups = ")
             << groups << " must divide the rows of x and y, got "
             << shapeStr(x) << " and " << shapeStr(y);
  }
  if (y.isParameter()) {
    if (!x.isBatched())
      return emitOpError("a 'parameter' weight requires a 'batched' x, got '")
             << fmtName(x.getFormatKind()) << "'";
    if (!out.isBatched())
      return emitOpError("GeMM with a 'parameter' weight produces a "
                         "'batched' result, got '")
             << fmtName(out.getFormatKind()) << "'";
    return expectInner(*this, out, y.getD0(), x.getD0() / groups);
  }
  if (failed(verifyWorkloadResult(*this, {x, y}, out)))
    return failure();
  return expectInner(*this, out, y.getD0(), x.getD0());
}

bool GeMMOp::readsStreamedWeight() {
  return getNumGroups() > 1 || vt(getY()).isStreamedParameter();
}

LogicalResult GeMVOp::verify() {
  VTensorType x = vt(getX()), y = vt(getY()), out = vt(getResult());
  if (x.getD0() != 1 || y.getD0() != 1)
    return emitOpError("operands must have one row (D0 == 1), got ")
           << shapeStr(x) << " and " << shapeStr(y);
  if (x.getD1() != y.getD1())
    return emitOpError("operand lengths differ: ")
           << x.getD1() << " vs " << y.getD1();
  if (failed(verifyWorkloadResult(*this, {x, y}, out)))
    return failure();
  return expectInner(*this, out, 1, 1);
}

//===----------------------------------------------------------------------===//
// Row-segment ops
//===----------------------------------------------------------------------===//

static LogicalResult verifySegmentOp(Operation *op, int64_t dim) {
  VTensorType in = vt(op->getOperand(0)), out = vt(op->getResult(0));
  if (dim != 0)
    return op->emitOpError("only dim = 0 (over the blocks of a row) is "
                           "supported, got ")
           << dim;
  if (!in.isRagged() || !out.isRagged())
    return op->emitOpError("requires a 'ragged' input and result, got '")
           << fmtName(in.getFormatKind()) << "' -> '"
           << fmtName(out.getFormatKind()) << "'";
  if (failed(verifyLeading(op, {in}, out)))
    return failure();
  return expectInner(op, out, in.getD0(), in.getD1());
}

LogicalResult SoftmaxOp::verify() { return verifySegmentOp(*this, getDim()); }
LogicalResult NormalizeOp::verify() {
  return verifySegmentOp(*this, getDim());
}

LogicalResult Conv1dOp::verify() {
  if (failed(verifySegmentOp(*this, getDim())))
    return failure();
  auto wType = cast<ShapedType>(getWeight().getType());
  VTensorType in = vt(getInput());
  if (wType.getRank() != 3 || wType.getDimSize(0) < 1 ||
      wType.getDimSize(1) != in.getD0() || wType.getDimSize(2) != in.getD1())
    return emitOpError("weight must be [K, ")
           << in.getD0() << ", " << in.getD1() << "] with K >= 1, got "
           << wType;
  return success();
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::verify() {
  VTensorType in = vt(getInput()), out = vt(getResult());
  if (failed(verifyWorkloadResult(*this, {in}, out)))
    return failure();
  return expectInner(*this, out, in.getD1(), in.getD0());
}

Schedule ReshapeOp::getSchedule() {
  return vt(getInput()).needsPadding() || vt(getResult()).needsPadding()
             ? Schedule::S
             : Schedule::W;
}

LogicalResult ReshapeOp::verify() {
  VTensorType in = vt(getInput()), out = vt(getResult());
  if (in.getNumInnerElements() != out.getNumInnerElements())
    return emitOpError("reshape must keep the inner element count: ")
           << shapeStr(in) << " has " << in.getNumInnerElements() << ", "
           << shapeStr(out) << " has " << out.getNumInnerElements();
  return verifyWorkloadResult(*this, {in}, out);
}

LogicalResult KronOp::verify() {
  VTensorType x = vt(getLhs()), y = vt(getRhs()), out = vt(getResult());
  ArrayRef<int64_t> dims = getDims();
  if (dims.empty() || dims.size() > 2)
    return emitOpError("dims must be a non-empty subset of {1, 2}");
  bool kron[3] = {false, false, false};
  for (int64_t d : dims) {
    if (d != 1 && d != 2)
      return emitOpError("dims must be a subset of {1, 2}, got ") << d;
    if (kron[d])
      return emitOpError("dims must not repeat an axis, got ") << d << " twice";
    kron[d] = true;
  }
  int64_t expected[3];
  for (unsigned a = 1; a <= 2; ++a) {
    if (kron[a]) {
      expected[a] = x.getInner(a) * y.getInner(a);
      continue;
    }
    FailureOr<int64_t> e = broadcastExtent(x.getInner(a), y.getInner(a));
    if (failed(e))
      return emitOpError("non-Kronecker axis ")
             << a << " does not broadcast: " << x.getInner(a) << " vs "
             << y.getInner(a);
    expected[a] = *e;
  }
  if (failed(verifyWorkloadResult(*this, {x, y}, out)))
    return failure();
  return expectInner(*this, out, expected[1], expected[2]);
}

LogicalResult MaskSliceOp::verify() {
  VTensorType in = vt(getInput());
  int64_t dim = getDim();
  if (dim != 1 && dim != 2)
    return emitOpError("dim must be 1 or 2, got ") << dim;
  int64_t extent = in.getInner(dim);
  // I64Attr getters return uint64_t; compare as signed.
  int64_t start = getStart(), end = getEnd();
  if (start < 0 || start > end || end > extent)
    return emitOpError("slice [")
           << start << ", " << end
           << ") must satisfy 0 <= start <= end <= " << extent
           << " (the extent along dim " << dim << ")";
  return detail::verifySameShapeOp(*this);
}

//===----------------------------------------------------------------------===//
// Fields
//===----------------------------------------------------------------------===//

/// "parameter 'w'" for the body argument `w` of a flow, else "a 'parameter'
/// tensor".
static std::string describeParameter(Value v) {
  Region *region = v.getParentRegion();
  if (auto flow = dyn_cast_or_null<FlowOp>(region ? region->getParentOp()
                                                  : nullptr)) {
    StringRef name = flow.getArgumentName(v);
    if (!name.empty())
      return ("parameter '" + name + "'").str();
  }
  return "a 'parameter' tensor";
}

static LogicalResult verifyFieldOperand(Operation *op, Value fieldValue,
                                        bool allowSlotted, bool writes) {
  VTensorType field = vt(fieldValue);
  if (field.isPaged() || (allowSlotted && field.isSlotted()))
    return success();
  if (field.isParameter()) {
    if (writes)
      return op->emitOpError("writes ")
             << describeParameter(fieldValue)
             << ", which is read-only (a parameter is bound at run time and "
                "never written by a step)";
    return op->emitOpError("reads ")
           << describeParameter(fieldValue)
           << " as a field; a parameter is not per-block state: use it "
              "directly as an operand";
  }
  return op->emitOpError("field must be 'paged'")
         << (allowSlotted ? " or 'slotted'" : "") << ", got '"
         << fmtName(field.getFormatKind()) << "'";
}

static LogicalResult verifySameInner(Operation *op, VTensorType a,
                                     VTensorType b) {
  if (a.getD0() != b.getD0() || a.getD1() != b.getD1())
    return op->emitOpError("inner shapes must match: ")
           << shapeStr(a) << " vs " << shapeStr(b);
  return success();
}

LogicalResult FillOp::verify() {
  return verifyFieldOperand(*this, getField(), /*allowSlotted=*/true,
                            /*writes=*/true);
}

LogicalResult WriteOp::verify() {
  VTensorType v = vt(getValue()), f = vt(getField());
  if (failed(verifyFieldOperand(*this, getField(), /*allowSlotted=*/true,
                                /*writes=*/true)))
    return failure();
  if (!v.isRagged())
    return emitOpError("value must be a 'ragged' per-block tensor, got '")
           << fmtName(v.getFormatKind()) << "'";
  return verifySameInner(*this, v, f);
}

Value mlir::vortex::getWrittenField(Operation *op) {
  if (auto w = dyn_cast<WriteOp>(op))
    return w.getField();
  if (auto s = dyn_cast<SaveOp>(op))
    return s.getField();
  if (auto f = dyn_cast<FillOp>(op))
    return f.getField();
  if (auto d = dyn_cast<LearnedDescriptorOp>(op))
    return d.getField();
  return {};
}

int64_t LearnedDescriptorOp::getLandmarks() {
  return vt(getMix()).getD0() / getHeads();
}

int64_t LearnedDescriptorOp::getRank() {
  return vt(getProj()).getD0() / getHeads();
}

LogicalResult LearnedDescriptorOp::verify() {
  VTensorType x = vt(getBlock()), mix = vt(getMix()), proj = vt(getProj()),
              f = vt(getField());
  if (failed(verifyFieldOperand(*this, getField(), /*allowSlotted=*/false,
                                /*writes=*/true)))
    return failure();
  if (!x.isPaged())
    return emitOpError("block must be a 'paged' pool, got '")
           << fmtName(x.getFormatKind()) << "'";
  for (auto [name, w] : {std::pair<StringRef, VTensorType>{"mix", mix},
                         {"proj", proj}})
    if (!w.isParameter())
      return emitOpError(name) << " must be a 'parameter', got '"
                               << fmtName(w.getFormatKind()) << "'";
  int64_t heads = getHeads();
  if (mix.getD0() % heads || proj.getD0() % heads)
    return emitOpError("heads = ")
           << heads << " must divide the rows of mix " << shapeStr(mix)
           << " and proj " << shapeStr(proj);
  if (mix.getD1() != x.getD0())
    return emitOpError("mix ")
           << shapeStr(mix) << " must weight the block's " << x.getD0()
           << " tokens (mix [H m, bs])";
  if (proj.getD1() != x.getD1())
    return emitOpError("proj ")
           << shapeStr(proj) << " must compress the block's " << x.getD1()
           << " channels (proj [H r, d])";
  if (x.getD1() > kMaxDescriptorWidth)
    return emitOpError("block width d = ")
           << x.getD1() << " is over " << kMaxDescriptorWidth
           << ": the kernel holds a token-mixed row of d f32 in shared memory";
  if (f.getD0() != mix.getD0() || f.getD1() != getRank())
    return emitOpError("field ")
           << shapeStr(f) << " must be [H m, r] = [" << mix.getD0() << ", "
           << getRank() << "]";
  return success();
}

LogicalResult SaveOp::verify() {
  VTensorType v = vt(getValue()), f = vt(getField());
  if (failed(verifyFieldOperand(*this, getField(), /*allowSlotted=*/false,
                                /*writes=*/true)))
    return failure();
  if (!v.isRagged())
    return emitOpError("value must be 'ragged', got '")
           << fmtName(v.getFormatKind()) << "'";
  return verifySameInner(*this, v, f);
}

LogicalResult LoadOp::verify() {
  VTensorType f = vt(getField()), out = vt(getResult());
  if (failed(verifyFieldOperand(*this, getField(), /*allowSlotted=*/false,
                                /*writes=*/false)))
    return failure();
  if (!out.isRagged())
    return emitOpError("result must be 'ragged', got '")
           << fmtName(out.getFormatKind()) << "'";
  return verifySameInner(*this, f, out);
}

//===----------------------------------------------------------------------===//
// Selection
//===----------------------------------------------------------------------===//

static LogicalResult verifyScalarPerBlock(Operation *op, VTensorType t,
                                          StringRef what, Format format) {
  if (t.getD0() != 1 || t.getD1() != 1)
    return op->emitOpError() << what << " must be [S, 1, 1], got "
                             << shapeStr(t);
  if (t.getFormatKind() != format)
    return op->emitOpError() << what << " must be '" << fmtName(format)
                             << "', got '" << fmtName(t.getFormatKind())
                             << "'";
  return success();
}

static LogicalResult verifySelection(Operation *op, Value score,
                                     Value output) {
  if (failed(verifyScalarPerBlock(op, vt(score), "score", Format::Ragged)))
    return failure();
  return verifyScalarPerBlock(op, vt(output), "output", Format::Ragged);
}

LogicalResult TopKOp::verify() {
  return verifySelection(*this, getScore(), getOutput());
}

LogicalResult ApproxTopKOp::verify() {
  if (failed(verifySelection(*this, getScore(), getOutput())))
    return failure();
  double t = getTolerateRatio().convertToDouble();
  if (!(t >= 0.0 && t <= 1.0))
    return emitOpError("tolerate_ratio must be in [0, 1], got ") << t;
  return success();
}

LogicalResult TrtllmTopKOp::verify() {
  // I64Attr getters return uint64_t; a negative k must not wrap around.
  int64_t k = getK();
  if (k <= 0)
    return emitOpError("k must be positive, got ") << k;
  if (failed(verifyScalarPerBlock(*this, vt(getScore()), "score",
                                  Format::Ragged)) ||
      failed(verifyScalarPerBlock(*this, vt(getBlockTable()), "block table",
                                  Format::Ragged)))
    return failure();
  return verifyScalarPerBlock(*this, vt(getSeqlens()), "seqlens",
                              Format::Batched);
}

LogicalResult UnionOp::verify() {
  if (failed(verifyScalarPerBlock(*this, vt(getLhsTable()), "lhs block table",
                                  Format::Ragged)) ||
      failed(verifyScalarPerBlock(*this, vt(getRhsTable()), "rhs block table",
                                  Format::Ragged)) ||
      failed(verifyScalarPerBlock(*this, vt(getLhsSeqlens()), "lhs seqlens",
                                  Format::Batched)) ||
      failed(verifyScalarPerBlock(*this, vt(getRhsSeqlens()), "rhs seqlens",
                                  Format::Batched)))
    return failure();
  return verifyScalarPerBlock(*this, vt(getOutput()), "output",
                              Format::Ragged);
}

//===----------------------------------------------------------------------===//
// Custom ops
//===----------------------------------------------------------------------===//

/// What the runtime can hand a registered torch function and take back: a
/// value per CSR position or per row (vortex_torch's S-op formats).
static bool isCustomCallFormat(VTensorType t) {
  return t.isRagged() || t.isBatched();
}

LogicalResult CustomCallOp::verify() {
  StringRef callee = getCallee();
  if (callee.empty() ||
      !llvm::all_of(callee, [](char c) {
        return llvm::isAlpha(c) || llvm::isDigit(c) || c == '_' || c == '.';
      }))
    return emitOpError("callee must be a non-empty name of letters, digits, "
                       "'_' and '.', got '")
           << callee << "'";
  // Indexer side only: the cache step runs kernels per completed block,
  // with no place for a host call.
  if (auto flow = (*this)->getParentOfType<FlowOp>())
    if (flow.getCacheBody().getParent()->isAncestor((*this)->getParentRegion()))
      return emitOpError("'")
             << callee
             << "' is on the cache side; custom ops run in the indexer only "
                "(the cache step runs kernels per completed block)";
  if (getInputs().empty())
    return emitOpError("'") << callee << "' needs at least one input";
  for (auto [i, v] : llvm::enumerate(getInputs()))
    if (!isCustomCallFormat(vt(v)))
      return emitOpError("input #")
             << i << " of '" << callee << "' must be a ragged or batched "
             << "value, got " << fmtName(vt(v).getFormatKind())
             << " (read a field with vortex.load first)";
  VTensorType result = vt(getResult());
  if (!isCustomCallFormat(result))
    return emitOpError("the result of '")
           << callee << "' must be declared ragged or batched, got "
           << fmtName(result.getFormatKind());
  // vortex_torch's format rule: BATCHED only when every input is.
  bool allBatched = llvm::all_of(
      getInputs(), [](Value v) { return vt(v).isBatched(); });
  if (result.isBatched() && !allBatched)
    return emitOpError("the result of '")
           << callee << "' is declared batched but an input is ragged: a "
           << "per-position input gives a per-position (ragged) result";
  return success();
}
