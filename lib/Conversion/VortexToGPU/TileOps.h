//===- TileOps.h - Per-item tiles and their op emitters ---------*- C++ -*-===//
//
// The op lowering of the GPU workload kernels, apart from the kernel
// skeletons (WorkloadKernels.cpp): a fused op becomes a per-item [D0, D1]
// tile whose elements are emitted at their use. TileBuilder holds the lane
// layout and the helpers every family shares; each op family has its
// emitter in its own file (TileElementwise.cpp, TileReduction.cpp,
// TileContraction.cpp, TileLayout.cpp) and TileBuilder::lower dispatches
// through the table of families.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_TILEOPS_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_TILEOPS_H

#include "KernelBuilder.h"

#include <memory>

namespace mlir::vortex::gpugen {

struct Tile;
using TileRef = std::shared_ptr<Tile>;

/// A per-item tile: element (r, e) is row r and, for a distributed tile,
/// column laneInItem * perLane + e, else column e.
struct Tile {
  int64_t d0 = 1, d1 = 1;         // computed extents
  int64_t realD0 = 1, realD1 = 1; // real extents
  bool distributed = false;
  int64_t perLane = 1;            // distributed: columns per lane
  std::function<Value(int64_t r, int64_t e)> at;

  int64_t width() const { return distributed ? perLane : d1; }
};

/// The lane layout of a kernel being emitted and the tile helpers.
class TileBuilder {
public:
  explicit TileBuilder(MLIRContext *ctx) : loc(UnknownLoc::get(ctx)) {}

  /// The tile of `op`'s result from its operands' tiles, or null if no
  /// family lowers `op`. A layout the group cannot do in registers sets
  /// `unsupported` (the kernel is then redone in narrow mode).
  TileRef lower(Operation *op);

  OpBuilder *builder = nullptr;
  Location loc;
  int64_t lanes = 1;
  Value laneInItem;
  bool unsupported = false;
  DenseMap<Value, TileRef> tiles;

  Gen gen() { return Gen{*builder, loc}; }
  TileRef operandTile(Operation *op, unsigned i) {
    return tiles.lookup(op->getOperand(i));
  }
  static VTensorType resultTypeOf(Operation *op) {
    return cast<VTensorType>(op->getResult(0).getType());
  }

  /// Columns of the distributed layout for an extent, or 0 if replicated.
  int64_t perLaneFor(int64_t d1) {
    if (lanes == 1 || d1 % lanes != 0)
      return 0;
    return d1 / lanes;
  }
  /// The column index of element e of `t` in this lane.
  Value column(const Tile &t, int64_t e);
  TileRef makeTile(VTensorType type, bool distributed);

  TileRef elementwise(VTensorType resultType, ArrayRef<TileRef> ins,
                      std::function<Value(Gen &, ArrayRef<Value>, int64_t r,
                                          int64_t e)>
                          fn);
  TileRef reduceColumns(TileRef in, VTensorType resultType, ReduceKind kind,
                        int64_t group, int64_t realCount);
  TileRef reduceRows(TileRef in, VTensorType resultType, ReduceKind kind,
                     int64_t group, int64_t realCount);
  TileRef contract(TileRef x, TileRef y, VTensorType resultType);
  Value clusterReduce(Value v, ReduceKind kind);
};

/// The per-family emitters: the tile of `op`, or null if `op` is not of the
/// family.
TileRef lowerElementwiseTile(TileBuilder &tb, Operation *op);
TileRef lowerReductionTile(TileBuilder &tb, Operation *op);
TileRef lowerContractionTile(TileBuilder &tb, Operation *op);
TileRef lowerLayoutTile(TileBuilder &tb, Operation *op);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_TILEOPS_H
