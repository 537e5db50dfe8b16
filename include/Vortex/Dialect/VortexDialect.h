//===- VortexDialect.h - Vortex dialect, attributes and types ---*- C++ -*-===//
//
// The vortex dialect: enums, attributes and the !vortex.vtensor type.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_VORTEXDIALECT_H
#define VORTEX_DIALECT_VORTEXDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "Vortex/Dialect/VortexDialect.h.inc"
#include "Vortex/Dialect/VortexEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Vortex/Dialect/VortexAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Vortex/Dialect/VortexTypes.h.inc"

namespace mlir::vortex {

/// Bounds of flow sizes (docs/contract.md, "Bounds"): every size, padded
/// extent and row budget stays representable where the lowerings compute it
/// (i32 kernel scalars and budgets, i64 offsets).
inline constexpr int64_t kMaxInnerExtent = int64_t(1) << 16;
/// Elements of one padded [D0, D1] tile (nextPowerOf2 of each extent). The
/// GPU generator holds a tile in the registers of a lane group, so its IR
/// grows with this product (fuzzing found group_size = 65536 taking 38 s and
/// 2.2 GB in convert-vortex-to-gpu).
inline constexpr int64_t kMaxTileElements = int64_t(1) << 17;
/// Elements of a padded parameter too large for a tile. Such a weight is
/// never held: the ops that may read it, GeMM's standalone parameter path
/// and a learned descriptor's proj, stream it from memory (docs/contract.md,
/// "Bounds"). 2^24 keeps such a weight within 64 MiB of f32.
inline constexpr int64_t kMaxStreamedElements = int64_t(1) << 24;
/// Channels d of a learned descriptor's block: its GPU kernel holds one
/// token-mixed row of d f32 in shared memory (16 KiB).
inline constexpr int64_t kMaxDescriptorWidth = 4096;
inline constexpr int64_t kMaxPageSize = int64_t(1) << 20;
inline constexpr int64_t kMaxBudget = (int64_t(1) << 31) - 1;

/// Next power of two >= n (vortex_torch `_next_pow2`; n <= 1 gives 1).
int64_t nextPowerOf2(int64_t n);

/// Whether a [d0, d1] tile (each in [1, kMaxInnerExtent]) stays within
/// kMaxTileElements once padded.
inline bool fitsTile(int64_t d0, int64_t d1) {
  return nextPowerOf2(d0) * nextPowerOf2(d1) <= kMaxTileElements;
}

/// Whether a parameter of [d0, d1] is within kMaxStreamedElements once
/// padded (a parameter over the tile bound is streamed, see above).
inline bool fitsStreamed(int64_t d0, int64_t d1) {
  return nextPowerOf2(d0) * nextPowerOf2(d1) <= kMaxStreamedElements;
}

/// True for the element types a vtensor may hold.
bool isValidVTensorElementType(Type type);

/// The output-format rule of workload-fused ops: batched iff every input is
/// batched or a parameter and at least one is batched, else ragged (a
/// parameter counts as a batched value of one row shared by every row).
Format inferWorkloadFormat(ArrayRef<Format> inputs);

/// Neutral element of a reduction: what a padded, masked or empty lane
/// holds (-inf for max, +inf for min, 0 otherwise).
double neutralOf(ReduceKind kind);

} // namespace mlir::vortex

#endif // VORTEX_DIALECT_VORTEXDIALECT_H
