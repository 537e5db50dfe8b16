//===- VortexOps.cpp - Vortex op verifiers and the flow op ----------------===//
//
// The verifiers enforce what vortex_torch asserts at trace time: ranks and
// inner-shape rules, broadcasting, the per-op format tables and the
// output-format rule of workload-fused ops.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
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
  if (y.isParameter()) {
    if (!x.isBatched())
      return emitOpError("a 'parameter' weight requires a 'batched' x, got '")
             << fmtName(x.getFormatKind()) << "'";
    if (!out.isBatched())
      return emitOpError("GeMM with a 'parameter' weight produces a "
                         "'batched' result, got '")
             << fmtName(out.getFormatKind()) << "'";
    return expectInner(*this, out, y.getD0(), x.getD0());
  }
  if (failed(verifyWorkloadResult(*this, {x, y}, out)))
    return failure();
  return expectInner(*this, out, y.getD0(), x.getD0());
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
// FlowOp
//===----------------------------------------------------------------------===//

SmallVector<StringRef> FlowOp::getCacheTensorNames() {
  SmallVector<StringRef> names = {"k", "v"};
  for (Attribute a : getFields())
    names.push_back(cast<FieldAttr>(a).getName().getValue());
  return names;
}

SmallVector<FieldAttr> FlowOp::getParamDecls() {
  SmallVector<FieldAttr> params;
  if (ArrayAttr attr = getParamsAttr())
    for (Attribute a : attr)
      params.push_back(cast<FieldAttr>(a));
  return params;
}

SmallVector<StringRef> FlowOp::getParamNames() {
  SmallVector<StringRef> names;
  for (FieldAttr p : getParamDecls())
    names.push_back(p.getName().getValue());
  return names;
}

/// Body argument names in order: (q, o on the indexer side), k, v, the
/// fields, the parameters.
static SmallVector<StringRef> bodyArgumentNames(FlowOp flow, bool indexer) {
  SmallVector<StringRef> names;
  if (indexer)
    names = {"q", "o"};
  llvm::append_range(names, flow.getCacheTensorNames());
  llvm::append_range(names, flow.getParamNames());
  return names;
}

StringRef FlowOp::getArgumentName(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner()->getParentOp() != getOperation())
    return {};
  bool indexer = arg.getOwner()->getParent() == &getIndexer();
  SmallVector<StringRef> names = bodyArgumentNames(*this, indexer);
  return arg.getArgNumber() < names.size() ? names[arg.getArgNumber()]
                                           : StringRef();
}

VTensorType FlowOp::getKVType() {
  FlowConfigAttr c = getConfig();
  return VTensorType::get(
      {ShapedType::kDynamic, c.getBlockSize(), c.getHeadDim()},
      c.getKvDtype(), Format::Paged);
}

VTensorType FlowOp::getQueryType(Type elementType, int64_t tokens) {
  FlowConfigAttr c = getConfig();
  return VTensorType::get(
      {ShapedType::kDynamic, tokens * c.getGroupSize(), c.getHeadDim()},
      elementType, Format::Batched);
}

int64_t FlowOp::getQueryTokens() {
  auto q = cast<VTensorType>(getIndexerBody().getArgument(0).getType());
  return std::max<int64_t>(q.getD0() / getConfig().getGroupSize(), 1);
}

VTensorType FlowOp::getOutputType() {
  return VTensorType::get({ShapedType::kDynamic, 1, 1},
                          IntegerType::get(getContext(), 32), Format::Ragged);
}

VTensorType FlowOp::getFieldType(FieldAttr field) {
  return VTensorType::get({ShapedType::kDynamic, field.getRows(),
                           field.getCols()},
                          getConfig().getIntermediateDtype(), Format::Paged);
}

VTensorType FlowOp::getParamType(FieldAttr param) {
  return VTensorType::get({1, param.getRows(), param.getCols()},
                          getConfig().getIntermediateDtype(),
                          Format::Parameter);
}

Operation *FlowOp::getSelectionOp() {
  for (Operation &op : getIndexerBody())
    if (isa<TopKOp, ApproxTopKOp, UnionOp>(op))
      return &op;
  return nullptr;
}

void FlowOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setNameFn) {
  if (region.empty())
    return;
  SmallVector<StringRef> names =
      bodyArgumentNames(*this, &region == &getIndexer());
  for (auto [arg, name] : llvm::zip(region.getArguments(), names))
    setNameFn(arg, name);
}

/// `(name = [r, c], ...)`: the list of `fields(...)` or `params(...)`.
static ParseResult parseDeclList(OpAsmParser &parser, bool isParam,
                                 SmallVectorImpl<Attribute> &decls) {
  MLIRContext *ctx = parser.getContext();
  return parser.parseCommaSeparatedList(
      OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
        std::string name;
        int64_t rows, cols;
        llvm::SMLoc loc = parser.getCurrentLocation();
        if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
            parser.parseLSquare() || parser.parseInteger(rows) ||
            parser.parseComma() || parser.parseInteger(cols) ||
            parser.parseRSquare())
          return failure();
        if (isParam && name.empty())
          return parser.emitError(loc, "parameter needs a non-empty name");
        if (isParam && (rows <= 0 || cols <= 0 || rows > kMaxInnerExtent ||
                        cols > kMaxInnerExtent))
          return parser.emitError(loc, "parameter '")
                 << name << "' must have an [r, c] shape in [1, "
                 << kMaxInnerExtent << "], got [" << rows << ", " << cols
                 << "]";
        if (isParam && !fitsTile(rows, cols))
          return parser.emitError(loc, "parameter '")
                 << name << "' [" << rows << ", " << cols
                 << "] must have at most " << kMaxTileElements
                 << " elements (padded to powers of two)";
        auto emitError = [&]() { return parser.emitError(loc); };
        FieldAttr decl = FieldAttr::getChecked(
            emitError, ctx, StringAttr::get(ctx, name), rows, cols);
        if (!decl)
          return failure();
        decls.push_back(decl);
        return success();
      });
}

static void printDeclList(OpAsmPrinter &p, ArrayAttr decls) {
  p << "(";
  llvm::interleaveComma(decls, p, [&](Attribute a) {
    auto f = cast<FieldAttr>(a);
    p.printKeywordOrString(f.getName().getValue());
    p << " = [" << f.getRows() << ", " << f.getCols() << "]";
  });
  p << ")";
}

// vortex.flow @name config = #vortex.config<...> fields(a = [r, c], ...)
//     [params(w = [r, c], ...)]
//     cache(%k: T, ...) { ... } indexer(%q: T, ...) { ... } [attributes {...}]
ParseResult FlowOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr symName;
  FlowConfigAttr config;
  if (parser.parseSymbolName(symName) || parser.parseKeyword("config") ||
      parser.parseEqual() || parser.parseAttribute(config) ||
      parser.parseKeyword("fields"))
    return failure();
  MLIRContext *ctx = parser.getContext();
  SmallVector<Attribute> fields, params;
  if (parseDeclList(parser, /*isParam=*/false, fields))
    return failure();
  if (succeeded(parser.parseOptionalKeyword("params")) &&
      parseDeclList(parser, /*isParam=*/true, params))
    return failure();
  result.addAttribute(getSymNameAttrName(result.name), symName);
  result.addAttribute(getConfigAttrName(result.name), config);
  result.addAttribute(getFieldsAttrName(result.name),
                      ArrayAttr::get(ctx, fields));
  // No parameters: no attribute, so such a flow prints as it always did.
  if (!params.empty())
    result.addAttribute(getParamsAttrName(result.name),
                        ArrayAttr::get(ctx, params));

  for (StringRef keyword : {"cache", "indexer"}) {
    SmallVector<OpAsmParser::Argument> args;
    Region *region = result.addRegion();
    if (parser.parseKeyword(keyword) ||
        parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren,
                                 /*allowType=*/true) ||
        parser.parseRegion(*region, args))
      return failure();
    if (region->empty())
      region->emplaceBlock();
  }
  return parser.parseOptionalAttrDictWithKeyword(result.attributes);
}

void FlowOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << " config = ";
  p.printAttribute(getConfig());
  p << " fields";
  printDeclList(p, getFields());
  if (ArrayAttr params = getParamsAttr(); params && !params.empty()) {
    p << " params";
    printDeclList(p, params);
  }
  auto printBody = [&](StringRef keyword, Region &region) {
    p.printNewline();
    p << keyword << "(";
    llvm::interleaveComma(region.getArguments(), p,
                          [&](BlockArgument a) { p.printRegionArgument(a); });
    p << ") ";
    p.printRegion(region, /*printEntryBlockArgs=*/false,
                  /*printBlockTerminators=*/false);
  };
  printBody("cache", getCache());
  printBody("indexer", getIndexer());
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getSymNameAttrName(), getConfigAttrName(), getFieldsAttrName(),
       getParamsAttrName()});
}

namespace {
/// Which side of a flow an op runs on, for the side-specific rules.
enum class Side { Cache, Indexer };
} // namespace

static LogicalResult verifyArgType(FlowOp flow, BlockArgument arg,
                                   StringRef name, VTensorType expected,
                                   bool allowSlotted) {
  auto actual = dyn_cast<VTensorType>(arg.getType());
  if (actual && allowSlotted && actual.isSlotted())
    actual = actual.withFormat(Format::Paged);
  // Explicit padding (made by the padding pass) does not change the type.
  if (actual && actual.withExplicitPadding(false) == expected)
    return success();
  return flow.emitOpError("argument '")
         << name << "' must have type " << expected << ", got "
         << arg.getType();
}

static LogicalResult verifySideOps(FlowOp flow, Block &body, Side side) {
  Type intermediate = flow.getConfig().getIntermediateDtype();
  StringRef sideName = side == Side::Cache ? "cache" : "indexer";
  // Ops nested in fused kernels follow the same rules.
  SmallVector<Operation *> nested;
  body.walk([&](Operation *op) { nested.push_back(op); });
  for (Operation *opPtr : nested) {
    Operation &op = *opPtr;
    // Unregistered ops have no dialect.
    if (!isa_and_nonnull<VortexDialect>(op.getDialect()))
      return op.emitOpError("is not a vortex op; a flow body holds only "
                            "vortex ops");
    if (side == Side::Cache) {
      // vortex_torch.cache exports no Sum, GeMV, Transpose or Kron
      // (reference, 2.2).
      if (isa<SaveOp, LoadOp, TopKOp, ApproxTopKOp, TrtllmTopKOp, UnionOp,
              GeMVOp, SumOp, TransposeOp, KronOp>(op))
        return op.emitOpError("is an indexer-side op and cannot appear in "
                              "the cache body");
      auto sched = dyn_cast<ScheduledOpInterface>(op);
      if (sched && sched.getSchedule() == Schedule::S)
        return op.emitOpError("is standalone (schedule S); the cache side "
                              "fuses every op into one per-block kernel");
    } else if (isa<FillOp, WriteOp, MaxInterleaveOp, MinInterleaveOp,
                   MeanInterleaveOp, L2NormInterleaveOp>(op)) {
      return op.emitOpError("is a cache-side op and cannot appear in the "
                            "indexer body");
    }
    // A mask keeps its input's type (MaskLanesOp::verify): masking q, k or
    // v keeps their dtype, which need not be the intermediate one.
    if (isa<MaskLanesOp>(op))
      continue;
    for (Type t : op.getResultTypes()) {
      auto v = cast<VTensorType>(t);
      if (isa<FloatType>(v.getElementType()) &&
          v.getElementType() != intermediate)
        return op.emitOpError("intermediate results use the flow's "
                              "intermediate dtype ")
               << intermediate << ", got " << v.getElementType() << " in the "
               << sideName << " body";
    }
  }
  return success();
}

/// Names the compiled flow's ABI gives its other step arguments
/// (FlowABI.h); a field or parameter may not take one.
static bool isReservedABIName(StringRef name) {
  return llvm::is_contained({"q", "dense_kv_indptr", "dense_kv_indices",
                             "sparse_kv_indptr", "sparse_kv_indices",
                             "block_ids", "kv_indptr", "kv_indices",
                             "kv_last_len", "o", "lse", "sm_scale"},
                            name);
}

/// Field and parameter names: unique, k and v implicit, none an ABI name.
static LogicalResult verifyDeclarations(FlowOp flow,
                                        SmallVectorImpl<FieldAttr> &fields,
                                        SmallVectorImpl<FieldAttr> &params) {
  // Fields: unique names, k and v implicit.
  llvm::StringSet<> seen;
  for (Attribute a : flow.getFields()) {
    auto f = cast<FieldAttr>(a);
    StringRef name = f.getName().getValue();
    if (name == "k" || name == "v")
      return flow.emitOpError("cache field '")
             << name << "' is implicit and must not be declared";
    if (isReservedABIName(name))
      return flow.emitOpError("cache field '")
             << name << "' takes the name of a step argument of the "
                "compiled flow";
    if (!seen.insert(name).second)
      return flow.emitOpError("cache field '")
             << name << "' is declared twice";
    fields.push_back(f);
  }
  // Parameters: names unique across k, v, the fields and the parameters.
  SmallVector<FieldAttr> decls = flow.getParamDecls();
  params.assign(decls.begin(), decls.end());
  for (FieldAttr p : params) {
    StringRef name = p.getName().getValue();
    if (name == "k" || name == "v")
      return flow.emitOpError("parameter '")
             << name << "' takes the name of the cache tensor '" << name
             << "'";
    if (isReservedABIName(name))
      return flow.emitOpError("parameter '")
             << name << "' takes the name of a step argument of the "
                "compiled flow";
    if (llvm::any_of(fields,
                     [&](FieldAttr f) { return f.getName() == p.getName(); }))
      return flow.emitOpError("parameter '")
             << name << "' takes the name of a cache field";
    if (!seen.insert(name).second)
      return flow.emitOpError("parameter '") << name << "' is declared twice";
  }
  return success();
}

/// The bodies' arguments: k, v, the fields and parameters on both sides,
/// then q and o on the indexer's.
static LogicalResult verifySignatures(FlowOp flow, ArrayRef<FieldAttr> fields,
                                      ArrayRef<FieldAttr> params) {
  Block &cache = flow.getCacheBody(), &indexer = flow.getIndexerBody();
  size_t n = fields.size(), np = params.size();
  auto declared = [&](InFlightDiagnostic &diag) -> InFlightDiagnostic & {
    diag << n << " declared field(s)";
    if (np)
      diag << " and the " << np << " parameter(s)";
    return diag;
  };
  if (cache.getNumArguments() != 2 + n + np) {
    auto diag = flow.emitOpError("cache body must take k, v and the ");
    return declared(diag) << ", got " << cache.getNumArguments()
                          << " argument(s)";
  }
  if (indexer.getNumArguments() != 4 + n + np) {
    auto diag = flow.emitOpError("indexer body must take q, o, k, v and the ");
    return declared(diag) << ", got " << indexer.getNumArguments()
                          << " argument(s)";
  }
  VTensorType kv = flow.getKVType();
  for (auto [side, block, offset] :
       {std::tuple<Side, Block *, unsigned>{Side::Cache, &cache, 0},
        {Side::Indexer, &indexer, 2}}) {
    bool slotted = side == Side::Cache;
    if (failed(verifyArgType(flow, block->getArgument(offset), "k", kv,
                             slotted)) ||
        failed(verifyArgType(flow, block->getArgument(offset + 1), "v", kv,
                             slotted)))
      return failure();
    for (auto [i, f] : llvm::enumerate(fields))
      if (failed(verifyArgType(flow, block->getArgument(offset + 2 + i),
                               f.getName().getValue(), flow.getFieldType(f),
                               slotted)))
        return failure();
    for (auto [i, p] : llvm::enumerate(params))
      if (failed(verifyArgType(flow, block->getArgument(offset + 2 + n + i),
                               p.getName().getValue(), flow.getParamType(p),
                               /*allowSlotted=*/false)))
        return failure();
  }
  // q holds T >= 1 query tokens per row, token-major: [?, T x G, D]
  // (docs/contract.md, "Multi-token queries").
  auto q = dyn_cast<VTensorType>(indexer.getArgument(0).getType());
  int64_t g = flow.getConfig().getGroupSize();
  if (!q || !isa<FloatType>(q.getElementType()) || q.getD0() % g != 0 ||
      q.withExplicitPadding(false) !=
          flow.getQueryType(q.getElementType(), q.getD0() / g))
    return flow.emitOpError(
               "argument 'q' must be a batched float vtensor [?, T x ")
           << g << ", " << flow.getConfig().getHeadDim()
           << "] (T >= 1 query tokens), got "
           << indexer.getArgument(0).getType();
  if (failed(verifyArgType(flow, indexer.getArgument(1), "o",
                           flow.getOutputType(), false)))
    return failure();
  return success();
}

/// The indexer ends in exactly one selection, which writes o.
static LogicalResult verifySelection(FlowOp flow) {
  Block &indexer = flow.getIndexerBody();
  Operation *selection = nullptr;
  for (Operation &op : indexer) {
    if (!isa<TopKOp, ApproxTopKOp, UnionOp>(op))
      continue;
    if (selection)
      return op.emitOpError("is a second selection; the indexer must end in "
                            "exactly one topk, approx_topk or union");
    selection = &op;
  }
  if (!selection)
    return flow.emitOpError("indexer must end in exactly one vortex.topk, "
                            "vortex.approx_topk or vortex.union");
  if (selection != &indexer.back())
    return selection->emitOpError("must be the last op of the indexer body");
  if (selection->getOperands().back() != indexer.getArgument(1))
    return selection->emitOpError("must write the indexer's output 'o'");
  return success();
}

/// k and v belong to the runtime; every declared field has a writer (cache
/// write/fill or indexer save) and a reader on the indexer side.
static LogicalResult verifyFieldUse(FlowOp flow, ArrayRef<FieldAttr> fields) {
  Block &cache = flow.getCacheBody(), &indexer = flow.getIndexerBody();
  for (unsigned i = 0; i < 2; ++i)
    for (Block *b : {&cache, &indexer})
      for (Operation *user : b->getArgument(b == &cache ? i : i + 2).getUsers())
        if (isa<WriteOp, FillOp, SaveOp>(user))
          return user->emitOpError("writes '")
                 << (i == 0 ? "k" : "v")
                 << "', which only the runtime writes";
  for (auto [i, f] : llvm::enumerate(fields)) {
    BlockArgument cacheArg = cache.getArgument(2 + i);
    BlockArgument indexerArg = indexer.getArgument(4 + i);
    // A slotted field is request-bound storage that the cache side writes
    // through slot_of_ptr; the indexer addresses fields by block id and
    // vortex_torch has no slotted indexer format (docs/contract.md).
    if (cast<VTensorType>(cacheArg.getType()).isSlotted()) {
      if (!indexerArg.use_empty())
        return (*indexerArg.getUsers().begin())->emitOpError("uses the "
                   "slotted field '")
               << f.getName().getValue()
               << "' on the indexer side; slotted fields are cache-side "
                  "storage addressed through slot_of_ptr";
      if (llvm::none_of(cacheArg.getUsers(), [](Operation *u) {
            return isa<WriteOp, FillOp>(u);
          }))
        return flow.emitOpError("slotted field '")
               << f.getName().getValue()
               << "' is never written (by vortex.write or vortex.fill on the "
                  "cache side)";
      continue;
    }
    bool written =
        llvm::any_of(cacheArg.getUsers(),
                     [](Operation *u) { return isa<WriteOp, FillOp>(u); }) ||
        llvm::any_of(indexerArg.getUsers(),
                     [](Operation *u) { return isa<SaveOp>(u); });
    // A field the indexer never reads is allowed, as in vortex_torch: a
    // flow may write a dummy field so its cache program has an output. It
    // is still allocated and written.
    if (!written)
      return flow.emitOpError("cache field '")
             << f.getName().getValue()
             << "' is never written (by vortex.write or vortex.fill on the "
                "cache side, or vortex.save on the indexer side)";
  }
  return success();
}

LogicalResult FlowOp::verifyRegions() {
  SmallVector<FieldAttr> fields, params;
  if (failed(verifyDeclarations(*this, fields, params)) ||
      failed(verifySignatures(*this, fields, params)))
    return failure();
  if (failed(verifySideOps(*this, getCacheBody(), Side::Cache)) ||
      failed(verifySideOps(*this, getIndexerBody(), Side::Indexer)))
    return failure();
  return failure(failed(verifySelection(*this)) ||
                 failed(verifyFieldUse(*this, fields)));
}
