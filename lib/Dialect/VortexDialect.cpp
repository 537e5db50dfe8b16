//===- VortexDialect.cpp - Vortex dialect, attributes and types -----------===//

#include "Vortex/Dialect/VortexDialect.h"
#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Dialect/VortexStageOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::vortex;

#include "Vortex/Dialect/VortexDialect.cpp.inc"
#include "Vortex/Dialect/VortexEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Vortex/Dialect/VortexAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Vortex/Dialect/VortexTypes.cpp.inc"

void VortexDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "Vortex/Dialect/VortexOps.cpp.inc"
      >();
  // The stage ops of a split step (VortexStageOps.td, a unit of its own).
  addOperations<
#define GET_OP_LIST
#include "Vortex/Dialect/VortexStageOps.cpp.inc"
      >();
}

void VortexDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Vortex/Dialect/VortexAttrs.cpp.inc"
      >();
}

void VortexDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "Vortex/Dialect/VortexTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

int64_t mlir::vortex::nextPowerOf2(int64_t n) {
  if (n <= 1)
    return 1;
  return static_cast<int64_t>(llvm::PowerOf2Ceil(static_cast<uint64_t>(n)));
}



Format mlir::vortex::inferWorkloadFormat(ArrayRef<Format> inputs) {
  // A parameter is one row shared by every row: it keeps a batched result
  // batched, but alone it gives no row domain (it broadcasts to every
  // position, a ragged value).
  bool rowwise = llvm::all_of(inputs, [](Format f) {
    return f == Format::Batched || f == Format::Parameter;
  });
  bool anyBatched = llvm::is_contained(inputs, Format::Batched);
  return rowwise && anyBatched ? Format::Batched : Format::Ragged;
}

double mlir::vortex::neutralOf(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Max:
    return -std::numeric_limits<double>::infinity();
  case ReduceKind::Min:
    return std::numeric_limits<double>::infinity();
  default:
    return 0.0;
  }
}

static bool isFloatStorageType(Type type) {
  return type.isBF16() || type.isF16() || type.isF32() ||
         isa<Float8E4M3FNType, Float8E5M2Type>(type);
}

bool mlir::vortex::isValidVTensorElementType(Type type) {
  return isFloatStorageType(type) || type.isSignlessInteger(32);
}

//===----------------------------------------------------------------------===//
// FlowConfigAttr / FieldAttr
//===----------------------------------------------------------------------===//

LogicalResult
FlowConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t blockSize, int64_t pageSize, int64_t headDim,
                       int64_t groupSize, int64_t topkVal, FloatAttr topkRatio,
                       int64_t reservedBos, int64_t reservedEos,
                       Type intermediateDtype, Type kvDtype,
                       int64_t kvLoraRank, int64_t ropeDim) {
  if (blockSize <= 0 || !llvm::isPowerOf2_64(blockSize))
    return emitError() << "block_size must be a positive power of two, got "
                       << blockSize;
  if (pageSize <= 0 || !llvm::isPowerOf2_64(pageSize))
    return emitError() << "page_size must be a positive power of two, got "
                       << pageSize;
  if (blockSize > pageSize)
    return emitError() << "block_size (" << blockSize
                       << ") must not exceed page_size (" << pageSize << ")";
  // Upper bounds keep every size and budget representable where the
  // lowerings compute it (i32 kernel scalars and row budgets; docs/contract.md
  // "Bounds").
  if (pageSize > kMaxPageSize)
    return emitError() << "page_size must be at most " << kMaxPageSize
                       << ", got " << pageSize;
  if (headDim <= 0 || headDim > kMaxInnerExtent)
    return emitError() << "head_dim must be in [1, " << kMaxInnerExtent
                       << "], got " << headDim;
  if (groupSize <= 0 || groupSize > kMaxInnerExtent)
    return emitError() << "group_size must be in [1, " << kMaxInnerExtent
                       << "], got " << groupSize;
  if (!fitsTile(groupSize, headDim) || !fitsTile(blockSize, headDim))
    return emitError() << "group_size x head_dim and block_size x head_dim "
                          "(padded to powers of two) must be at most "
                       << kMaxTileElements << " elements, got group_size = "
                       << groupSize << ", block_size = " << blockSize
                       << ", head_dim = " << headDim;
  if (topkVal < 0 || topkVal > kMaxBudget)
    return emitError() << "topk_val must be in [0, " << kMaxBudget
                       << "], got " << topkVal;
  double ratio = topkRatio ? topkRatio.getValueAsDouble() : -1.0;
  if (!(ratio >= 0.0 && ratio <= 1.0))
    return emitError() << "topk_ratio must be in [0, 1], got " << ratio;
  if (reservedBos < 0 || reservedEos < 0 || reservedBos > kMaxBudget ||
      reservedEos > kMaxBudget)
    return emitError() << "reserved_bos and reserved_eos must be in [0, "
                       << kMaxBudget << "], got " << reservedBos << " and "
                       << reservedEos;
  // Each term is below 2^31, so the sum cannot overflow int64.
  if (topkVal + reservedBos + reservedEos > kMaxBudget)
    return emitError() << "topk_val + reserved_bos + reserved_eos must be at "
                          "most "
                       << kMaxBudget << " (an i32 row budget), got "
                       << topkVal + reservedBos + reservedEos;
  if (!isFloatStorageType(intermediateDtype))
    return emitError() << "intermediate_dtype must be bf16, f16, f32, "
                          "f8E4M3FN or f8E5M2, got "
                       << intermediateDtype;
  if (!isFloatStorageType(kvDtype) && !kvDtype.isSignlessInteger(4))
    return emitError() << "kv_dtype must be bf16, f16, f32, f8E4M3FN, "
                          "f8E5M2 or i4, got "
                       << kvDtype;
  // Packed int4 k/v: two channels a byte, so the channels pair up.
  if (kvDtype.isSignlessInteger(4) && headDim % 2 != 0)
    return emitError() << "kv_dtype = i4 packs two channels a byte: head_dim "
                          "must be even, got "
                       << headDim;
  if (kvDtype.isSignlessInteger(4) && (kvLoraRank != 0 || ropeDim != 0))
    return emitError() << "kv_dtype = i4 is not supported for MLA flows "
                          "(kv_lora_rank/rope_dim set)";
  // MLA: the latent [kv_c | k_pe] is the head; both widths or neither.
  if (kvLoraRank != 0 || ropeDim != 0) {
    if (kvLoraRank <= 0 || ropeDim <= 0)
      return emitError() << "kv_lora_rank and rope_dim (an MLA flow) must "
                            "both be positive, got kv_lora_rank = "
                         << kvLoraRank << ", rope_dim = " << ropeDim;
    // Subtracted, not added: the widths may be any i64 (no overflow).
    if (ropeDim != headDim - kvLoraRank)
      return emitError() << "kv_lora_rank + rope_dim (" << kvLoraRank
                         << " + " << ropeDim
                         << ") must equal head_dim (the latent's width), got "
                            "head_dim = "
                         << headDim;
  }
  return success();
}

LogicalResult FieldAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringAttr name, int64_t rows, int64_t cols) {
  if (!name || name.getValue().empty())
    return emitError() << "cache field needs a non-empty name";
  if (rows <= 0 || cols <= 0 || rows > kMaxInnerExtent ||
      cols > kMaxInnerExtent)
    return emitError() << "cache field '" << name.getValue()
                       << "' must have an [r, c] shape in [1, "
                       << kMaxInnerExtent << "], got [" << rows << ", " << cols
                       << "]";
  // The declaration's bound is a parameter's; a cache field's tile bound is
  // the flow's rule (verifyDeclarations), as a field is held in a tile.
  if (!fitsStreamed(rows, cols))
    return emitError() << "declaration '" << name.getValue() << "' [" << rows
                       << ", " << cols << "] must have at most "
                       << kMaxStreamedElements
                       << " elements (padded to powers of two)";
  return success();
}

//===----------------------------------------------------------------------===//
// VTensorType
//===----------------------------------------------------------------------===//

LogicalResult VTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, Type elementType,
                                  FormatAttr format, bool explicitPadding) {
  if (shape.size() != 3)
    return emitError() << "vtensor must have rank 3 [L, D0, D1], got rank "
                       << shape.size();
  if (shape[0] != ShapedType::kDynamic && shape[0] < 0)
    return emitError() << "vtensor leading extent must be '?' or >= 0";
  for (unsigned i = 1; i < 3; ++i)
    if (shape[i] == ShapedType::kDynamic || shape[i] <= 0 ||
        shape[i] > kMaxInnerExtent)
      return emitError() << "vtensor inner extent D" << (i - 1)
                         << " must be static and in [1, " << kMaxInnerExtent
                         << "]";
  // A parameter over the tile is streamed by the one op that may read it
  // (FlowOp's verifier checks its uses), so its bound is larger.
  bool param = format && format.getValue() == Format::Parameter;
  if (param ? !fitsStreamed(shape[1], shape[2])
            : !fitsTile(shape[1], shape[2]))
    return emitError() << "vtensor [D0, D1] = [" << shape[1] << ", "
                       << shape[2] << "] must have at most "
                       << (param ? kMaxStreamedElements : kMaxTileElements)
                       << " elements (padded to powers of two)"
                       << (param ? " as a parameter" : "");
  if (!isValidVTensorElementType(elementType))
    return emitError() << "vtensor element type must be bf16, f16, f32, "
                          "f8E4M3FN, f8E5M2 or i32, got "
                       << elementType;
  if (!format)
    return emitError() << "vtensor needs a format";
  return success();
}

bool VTensorType::isStreamedParameter() const {
  return isParameter() && !fitsTile(getD0(), getD1());
}

SmallVector<int64_t, 3> VTensorType::getPaddedShape() const {
  ArrayRef<int64_t> s = getShape();
  return {s[0], nextPowerOf2(s[1]), nextPowerOf2(s[2])};
}

bool VTensorType::needsPadding() const {
  ArrayRef<int64_t> s = getShape();
  return nextPowerOf2(s[1]) != s[1] || nextPowerOf2(s[2]) != s[2];
}

VTensorType VTensorType::withFormat(Format format) const {
  return VTensorType::get(getContext(), getShape(), getElementType(),
                          FormatAttr::get(getContext(), format),
                          getExplicitPadding());
}

VTensorType VTensorType::withShape(ArrayRef<int64_t> shape) const {
  return VTensorType::get(getContext(), shape, getElementType(), getFormat(),
                          getExplicitPadding());
}

VTensorType VTensorType::withElementType(Type type) const {
  return VTensorType::get(getContext(), getShape(), type, getFormat(),
                          getExplicitPadding());
}

VTensorType VTensorType::withExplicitPadding(bool explicitPadding) const {
  return VTensorType::get(getContext(), getShape(), getElementType(),
                          getFormat(), explicitPadding);
}

// !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>[, padded = [8, 128]]>
Type VTensorType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  Attribute formatAttr;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/true,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return {};
  if (failed(parser.parseOptionalComma())) {
    parser.emitError(parser.getCurrentLocation(),
                     "expected ', #vortex.format<...>' after the element type "
                     "(a vtensor needs a format)");
    return {};
  }
  llvm::SMLoc formatLoc = parser.getCurrentLocation();
  if (parser.parseAttribute(formatAttr))
    return {};
  auto format = dyn_cast<FormatAttr>(formatAttr);
  if (!format) {
    parser.emitError(formatLoc, "expected a #vortex.format attribute");
    return {};
  }
  bool explicitPadding = false;
  if (succeeded(parser.parseOptionalComma())) {
    SmallVector<int64_t> padded;
    llvm::SMLoc padLoc = parser.getCurrentLocation();
    if (parser.parseKeyword("padded") || parser.parseEqual() ||
        parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() {
          int64_t v;
          if (parser.parseInteger(v))
            return failure();
          padded.push_back(v);
          return success();
        }))
      return {};
    if (shape.size() != 3 || padded.size() != 2 ||
        padded[0] != nextPowerOf2(shape[1]) ||
        padded[1] != nextPowerOf2(shape[2])) {
      parser.emitError(padLoc, "padded inner shape must be the next powers "
                               "of two of [D0, D1]");
      return {};
    }
    explicitPadding = true;
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<VTensorType>(loc, parser.getContext(), shape,
                                        elementType, format, explicitPadding);
}

void VTensorType::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printDimensionList(getShape());
  printer << "x" << getElementType() << ", " << getFormat();
  if (getExplicitPadding()) {
    SmallVector<int64_t, 3> padded = getPaddedShape();
    printer << ", padded = [" << padded[1] << ", " << padded[2] << "]";
  }
  printer << ">";
}
