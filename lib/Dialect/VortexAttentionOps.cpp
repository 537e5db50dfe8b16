//===- VortexAttentionOps.cpp - The attend op's verifier ------------------===//

#include "Vortex/Dialect/VortexOps.h"

using namespace mlir;
using namespace mlir::vortex;

/// `t` has rank `rank` and static, positive extents on axes 1.. (the lead is
/// the rows or the pool blocks and may be dynamic).
static LogicalResult checkInner(AttendOp op, StringRef name,
                                RankedTensorType t, int64_t rank) {
  if (t.getRank() != rank)
    return op.emitOpError() << name << " must have rank " << rank << ", got "
                            << t;
  for (int64_t d = 1; d < rank; ++d)
    if (t.isDynamicDim(d) || t.getDimSize(d) < 1)
      return op.emitOpError()
             << name << " needs a static positive extent on axis " << d
             << ", got " << t;
  return success();
}

/// Leading extents that must agree (`offset`: kv_indptr has rows + 1).
static LogicalResult checkRows(AttendOp op, int64_t rows, StringRef name,
                               RankedTensorType t, int64_t offset) {
  int64_t lead = t.getDimSize(0);
  if (ShapedType::isDynamic(rows) || ShapedType::isDynamic(lead) ||
      lead == rows + offset)
    return success();
  return op.emitOpError() << name << " has " << lead << " entries, expected "
                          << rows + offset << " (rows = " << rows
                          << (offset ? " + 1" : "") << ")";
}

/// Float pools of q's head dim, or packed int4 ones (two channels a byte)
/// with their per-channel k and per-token v scales.
static LogicalResult verifyPools(AttendOp op, int64_t dim) {
  RankedTensorType k = op.getK().getType();
  bool packed = k.getElementType().isInteger(8);
  if (static_cast<bool>(op.getKScale()) != static_cast<bool>(op.getVScale()))
    return op.emitOpError("takes both scales of a packed int4 pool or none");
  if (packed && !op.isInt4())
    return op.emitOpError("k and v of i8 are packed int4 pools and need "
                          "their scales(k_scale, v_scale)");
  if (!packed && op.isInt4())
    return op.emitOpError("scales are for packed int4 pools of i8, got k "
                          "and v of ")
           << k.getElementType();
  int64_t width = packed ? dim / 2 : dim;
  if ((packed && dim % 2 != 0) || k.getDimSize(2) != width)
    return op.emitOpError("k and v have ")
           << k.getDimSize(2) << (packed ? " bytes a token" : " channels")
           << ", q's head dim " << dim << " needs " << width
           << (packed ? " (two int4 channels a byte; D even)" : "");
  if (!packed)
    return success();
  int64_t bs = k.getDimSize(1);
  auto scaleOk = [&](Value s, int64_t d1, int64_t d2) {
    auto t = cast<RankedTensorType>(s.getType());
    return t.getRank() == 3 && t.getDimSize(1) == d1 && t.getDimSize(2) == d2;
  };
  if (!scaleOk(op.getKScale(), 1, dim))
    return op.emitOpError("k_scale must be [num_blocks, 1, ")
           << dim << "] (per channel), got " << op.getKScale().getType();
  if (!scaleOk(op.getVScale(), bs, 1))
    return op.emitOpError("v_scale must be [num_blocks, ")
           << bs << ", 1] (per token), got " << op.getVScale().getType();
  return success();
}

LogicalResult AttendOp::verify() {
  RankedTensorType q = getQ().getType(), k = getK().getType(),
                   v = getV().getType(), o = getO().getType(),
                   lse = getLse().getType();
  if (failed(checkInner(*this, "q", q, 3)) ||
      failed(checkInner(*this, "k", k, 3)) ||
      failed(checkInner(*this, "v", v, 3)))
    return failure();
  int64_t heads = q.getDimSize(1), dim = q.getDimSize(2);
  if (heads % getGroupSize() != 0)
    return emitOpError("q has ")
           << heads << " query heads, not a multiple of group_size "
           << getGroupSize() << " (q is [rows, T x G, D])";
  if (k.getShape().drop_front() != v.getShape().drop_front() ||
      k.getElementType() != v.getElementType())
    return emitOpError("k and v must be pools of one shape and type, got ")
           << k << " and " << v;
  if (failed(verifyPools(*this, dim)))
    return failure();
  using Named = std::pair<StringRef, Value>;
  for (auto [name, t] : {Named{"kv_indptr", getKvIndptr()},
                         Named{"kv_indices", getKvIndices()},
                         Named{"kv_last_len", getKvLastLen()}})
    if (cast<RankedTensorType>(t.getType()).getRank() != 1)
      return emitOpError() << name << " must have rank 1, got "
                           << t.getType();
  if (o.getRank() != 3 ||
      o.getShape().drop_front() != q.getShape().drop_front() ||
      o.getElementType() != q.getElementType())
    return emitOpError("o must be [rows, ")
           << heads << ", " << dim << "] of q's element type "
           << q.getElementType() << ", got " << o;
  if (lse.getRank() != 2 || lse.getDimSize(1) != heads)
    return emitOpError("lse must be [rows, ")
           << heads << "] of f32, got " << lse;
  int64_t rows = q.getDimSize(0);
  if (failed(checkRows(*this, rows, "o", o, 0)) ||
      failed(checkRows(*this, rows, "lse", lse, 0)) ||
      failed(checkRows(*this, rows, "kv_last_len", getKvLastLen().getType(),
                       0)) ||
      failed(checkRows(*this, rows, "kv_indptr", getKvIndptr().getType(), 1)))
    return failure();
  return success();
}
