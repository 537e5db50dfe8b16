//===- TileOps.h - Per-item tiles and their op emitters ---------*- C++ -*-===//
//
// The op lowering of the GPU workload kernels, apart from the kernel
// skeletons (WorkloadKernels.cpp) and their plan (WorkloadPlan.h): a fused
// op becomes a per-item [D0, D1] tile whose elements are emitted at their
// use. LaneLayout holds the lane layout and its rules; TileBuilder the
// helpers every family shares (whole-tile loads and stores: TileMemory.cpp).
// Each op family, in its own file (TileElementwise.cpp, TileReduction.cpp,
// TileContraction.cpp, TileLayout.cpp), is an entry of the table of
// families: which ops it takes, the layout of their result (pure, so a
// kernel is planned before any IR is built) and their emitter, which
// follows that layout.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_TILEOPS_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_TILEOPS_H

#include "KernelBuilder.h"

#include <array>
#include <memory>
#include <optional>

namespace mlir::vortex::gpugen {

struct Tile;
using TileRef = std::shared_ptr<Tile>;

/// How a per-item tile lies in the registers of an item's lanes: element
/// (r, e) is row r and, for a distributed tile, column
/// laneInItem * perLane + e, else column e (every lane holds the row).
struct TileShape {
  int64_t d0 = 1, d1 = 1;         // computed extents
  int64_t realD0 = 1, realD1 = 1; // real extents
  bool distributed = false;
  int64_t perLane = 1;            // distributed: columns per lane

  int64_t width() const { return distributed ? perLane : d1; }
};

/// The layout an op's result gets, and whether computing it reduces across
/// the lanes of an item (a subgroup reduction, which must not sit in
/// divergent code).
struct TileLayout {
  TileShape shape;
  bool crossLane = false;
};

/// A tile and its elements, emitted at their use.
struct Tile : TileShape {
  std::function<Value(int64_t r, int64_t e)> at;
  /// A loaded tile's row vectors in their storage type (empty otherwise):
  /// what a lowering that packs elements reads instead of `at`.
  SmallVector<Value> storageRows;
  /// Element (r, e) at dynamic indices as f32, read from the buffer: set for
  /// a loaded replicated tile without padding (null otherwise), what a
  /// rolled contraction reads.
  std::function<Value(Gen &, Value r, Value e)> load;

  /// Element (r, e) of a result with `outD1` columns that this tile is an
  /// operand of, broadcast as elementwise ops do: an extent of 1 is read at
  /// index 0.
  Value broadcastAt(int64_t r, int64_t e, int64_t outD1) const {
    return at(d0 == 1 ? 0 : r, d1 == 1 && outD1 != 1 ? 0 : e);
  }
};

/// The lane layout of a kernel and the layout rules every op family, the
/// planner and the emitters share: pure, they build no IR.
struct LaneLayout {
  int64_t lanes = 1;
  /// Columns of a lane's slice of a distributed row (0: the lane's columns
  /// are contiguous). With slices, element e of a lane lies in slice e /
  /// sliceColumns, and slice k of lane l at column (k lanes + l)
  /// sliceColumns: a group's load of one slice per lane covers whole
  /// sectors (docs/gpu.md, "Sector slices").
  int64_t sliceColumns = 0;

  /// The layout of `op`'s result from its operands' shapes at this lane
  /// count: failure when the lanes of an item cannot do it in registers
  /// (then the kernel runs narrow, one lane per item) or when no family
  /// takes `op` (`known` is then false).
  FailureOr<TileLayout> layoutOf(Operation *op, ArrayRef<TileShape> operands,
                                 bool &known) const;

  static VTensorType resultTypeOf(Operation *op) {
    return cast<VTensorType>(op->getResult(0).getType());
  }
  /// Columns of the distributed layout for an extent, or 0 if replicated.
  int64_t perLaneFor(int64_t d1) const {
    if (lanes == 1 || d1 % lanes != 0)
      return 0;
    return d1 / lanes;
  }
  /// Columns per contiguous run of a lane's part of `t`: its width unless
  /// the tile is distributed in slices.
  int64_t runOf(const TileShape &t) const {
    if (t.distributed && sliceColumns > 0 && t.perLane > sliceColumns &&
        t.perLane % sliceColumns == 0)
      return sliceColumns;
    return t.width();
  }
  TileShape shapeOf(VTensorType type, bool distributed) const;
  /// A loaded value: distributed when its columns spread evenly over the
  /// lanes.
  TileShape loadedShape(VTensorType type) const {
    return shapeOf(type, perLaneFor(computeExtent(type, 2)) > 0);
  }

  // The layout rules of the op families.
  FailureOr<TileShape> elementwiseShape(VTensorType resultType,
                                        ArrayRef<TileShape> ins) const;
  FailureOr<TileLayout> reduceColumnsLayout(const TileShape &in,
                                            VTensorType resultType,
                                            int64_t group) const;
  TileShape reduceRowsShape(const TileShape &in, VTensorType resultType) const;
  FailureOr<TileLayout> contractLayout(const TileShape &x, const TileShape &y,
                                       VTensorType resultType) const;
};

/// The alignment of a vector of `run` elements of `storage` in rows of
/// `stride` elements (TileMemory.cpp).
llvm::MaybeAlign runAlignment(int64_t stride, int64_t run, Type storage);

/// A kernel's tiles being emitted at its lane layout, and the tile helpers.
class TileBuilder : public LaneLayout {
public:
  explicit TileBuilder(MLIRContext *ctx) : loc(UnknownLoc::get(ctx)) {}

  /// The tile of `op`'s result from its operands' tiles, or null if no
  /// family lowers `op`. The layouts are the plan's (layoutOf); an emitter
  /// that meets a layout it cannot do sets `unsupported`, an internal error.
  TileRef lower(Operation *op);

  OpBuilder *builder = nullptr;
  /// The kernel's entry block, where per-thread buffers are allocated.
  Block *entryBlock = nullptr;
  Location loc;
  Value laneInItem;
  bool unsupported = false;
  /// Sums of envelope products by the identity (lowerEnvelopeSum).
  bool envelopeIdentity = true;
  /// The kernel's lowering of a reduction its plan puts on tensor cores
  /// (EnvelopeMMA.cpp); null for any other op.
  std::function<TileRef(Operation *reduction, TileRef in)> envelopeMMA;
  DenseMap<Value, TileRef> tiles;

  Gen gen() { return Gen{*builder, loc}; }
  TileRef operandTile(Operation *op, unsigned i) {
    return tiles.lookup(op->getOperand(i));
  }

  /// The column index of element e of `t` in this lane.
  Value column(const TileShape &t, int64_t e);
  /// This lane's part of the row at element `base` of `memref`: a vector
  /// load per contiguous run of its columns (runOf), concatenated.
  Value loadLaneRuns(Value memref, Value base, const TileShape &t,
                     Type storage, llvm::MaybeAlign align, bool nontemporal);
  TileRef makeTile(const TileShape &shape);
  TileRef makeTile(VTensorType type, bool distributed) {
    return makeTile(shapeOf(type, distributed));
  }

  // Whole tiles at a buffer row (TileMemory.cpp). `isScratch`: the buffer
  // holds the computed extents, else the real ones.
  SmallVector<Value> loadRowVectors(Value memref, Value rowBase,
                                    const Tile &shape, Type storage,
                                    bool isScratch, bool streaming = false);
  TileRef tileFromRows(Value value, ArrayRef<Value> rows);
  TileRef loadTile(Value value, Value memref, Value rowBase, bool isScratch,
                   bool streaming = false);
  /// The tile a loaded value gets: distributed when its columns spread
  /// evenly over the group's lanes.
  TileRef loadedLayout(VTensorType type) {
    return makeTile(loadedShape(type));
  }
  SmallVector<Value> materialize(const Tile &t);
  void storeTile(const Tile &t, ArrayRef<Value> values, Value memref,
                 Value rowBase, Type storage, bool isScratch);

  TileRef elementwise(VTensorType resultType, ArrayRef<TileRef> ins,
                      std::function<Value(Gen &, ArrayRef<Value>, int64_t r,
                                          int64_t e)>
                          fn);
  TileRef reduceColumns(TileRef in, VTensorType resultType, ReduceKind kind,
                        int64_t group, int64_t realCount);
  TileRef reduceRows(TileRef in, VTensorType resultType, ReduceKind kind,
                     int64_t group, int64_t realCount);
  TileRef contract(TileRef x, TileRef y, VTensorType resultType);
  TileRef contractRolled(const Tile &x, const Tile &y, const TileShape &shape);
  Value clusterReduce(Value v, ReduceKind kind);
};

/// An op family of the tile lowering: the ops it takes, the layout of their
/// result (failure: not in registers at this lane count) and the emitter.
struct TileFamily {
  bool (*matches)(Operation *op);
  FailureOr<TileLayout> (*layout)(const LaneLayout &tb, Operation *op,
                                  ArrayRef<TileShape> operands);
  TileRef (*lower)(TileBuilder &tb, Operation *op);
};
extern const TileFamily kElementwiseTiles, kReductionTiles,
    kContractionTiles, kLayoutTiles;

/// x, a and b of `v` = maximum(x * a, x * b) (either operand order of each
/// multiply), if `v` is one.
std::optional<std::array<Value, 3>> matchEnvelope(Value v);

/// Sums over the columns of max(x a, x b) on tensor cores (EnvelopeMMA.cpp,
/// docs/gpu.md "Envelope sums on tensor cores"): x is a per-row input of up
/// to 8 rows in bf16, a and b one loaded bf16 row each, distributed alike.
struct EnvelopeMMAOperands {
  VTensorType resultType;
  TileShape in, x;
  /// x's buffer: elements per batched row and per x row.
  Value xMemref;
  int64_t xRowElements = 0, xStride = 0;
  llvm::MaybeAlign xAlign;
  /// The lane's parts of a and b (vector<perLane x bf16>), the item's row.
  Value aRow, bRow, row;
};
/// What the persistent loop carries for the tensor-core sums: the row whose
/// x fragments the warp holds (i32, -1 for none) and the fragments (i32).
struct EnvelopeFragments {
  Value row;
  SmallVector<Value> regs;
};
/// i32 fragment registers a lane carries at `lanes` lanes of `perLane`
/// columns.
int64_t envelopeFragmentRegisters(int64_t lanes, int64_t perLane);
/// Whether the tensor-core sums can lay out over `lanes` lanes of
/// `perLane` columns and `rows` rows of x.
bool envelopeMMAFits(int64_t lanes, int64_t perLane, int64_t rows);
TileRef emitEnvelopeMMA(TileBuilder &tb, const EnvelopeMMAOperands &o,
                        EnvelopeFragments &state);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_TILEOPS_H
