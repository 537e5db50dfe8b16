//===- TileMemory.cpp - Loading and storing whole tiles -------------------===//
//
// The loads and stores of a tile at a buffer row: a lane's part of each
// row as vectors (a distributed tile's slice, or the whole row of a
// replicated one); padded rows and columns read 0 and are not stored to a
// flow tensor.
//
//===----------------------------------------------------------------------===//

#include "TileOps.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

/// The alignment of a vector of `run` elements of `storage` at a lane's
/// run in rows of `stride` elements: 16 bytes when every row and run start
/// on a 16-byte boundary, else the element's.
llvm::MaybeAlign mlir::vortex::gpugen::runAlignment(int64_t stride,
                                                    int64_t run,
                                                    Type storage) {
  unsigned bytes = storage.getIntOrFloatBitWidth() / 8;
  if ((stride * bytes) % 16 == 0 && (run * bytes) % 16 == 0)
    return llvm::Align(16);
  return std::nullopt;
}

/// Loads every row of a distributed tile's lane slice (as vectors) or a
/// replicated tile's rows (as vectors of the whole row). Padded rows are
/// not loaded (they read 0); padded columns are read with clamped, masked
/// scalar loads. `streaming` marks a distributed tile's vector loads
/// nontemporal (each lane reads its slice of the row once; a replicated
/// row's lanes read it together and keep it cached).
SmallVector<Value> TileBuilder::loadRowVectors(Value memref, Value rowBase,
                                               const Tile &t, Type storage,
                                               bool isScratch,
                                               bool streaming) {
  Gen g = gen();
  int64_t stride = isScratch ? t.d1 : t.realD1;
  int64_t rowsStored = isScratch ? t.d0 : t.realD0;
  int64_t colsStored = isScratch ? t.d1 : t.realD1;
  int64_t width = t.width();
  auto vecType = VectorType::get({width}, storage);
  SmallVector<Value> rows;
  for (int64_t r = 0; r < t.d0; ++r) {
    if (r >= rowsStored) {
      rows.push_back(arith::ConstantOp::create(
          g.b, g.loc, vecType,
          DenseElementsAttr::get(vecType, g.b.getZeroAttr(storage))));
      continue;
    }
    Value base = g.add(g.mul(rowBase, g.idx(rowsStored * stride)),
                       g.idx(r * stride));
    bool fullRow = t.d1 == colsStored;
    if (fullRow) {
      // A vector per contiguous run of the lane's columns (one unless the
      // layout has slices), aligned when every row starts on a vector
      // boundary.
      Value row = loadLaneRuns(memref, base, t, storage,
                               runAlignment(stride, runOf(t), storage),
                               streaming && t.distributed);
      rows.push_back(row);
      continue;
    }
    // Padded columns: clamped scalar loads, 0 beyond the real extent.
    Value row = arith::ConstantOp::create(
        g.b, g.loc, vecType,
        DenseElementsAttr::get(vecType, g.b.getZeroAttr(storage)));
    for (int64_t e = 0; e < width; ++e) {
      Value col = column(t, e);
      Value ok = g.lt(col, g.idx(colsStored));
      Value safe = g.minU(col, g.idx(colsStored - 1));
      Value v = g.load(memref, g.add(base, safe));
      Value zero = arith::ConstantOp::create(g.b, g.loc,
                                             g.b.getZeroAttr(storage));
      v = g.select(ok, v, zero);
      row = vector::InsertOp::create(g.b, g.loc, v, row, e);
    }
    rows.push_back(row);
  }
  return rows;
}

/// A tile over already loaded row vectors (storage type, widened to f32 at
/// each use).
TileRef TileBuilder::tileFromRows(Value value, ArrayRef<Value> rows) {
  TileRef t = loadedLayout(cast<VTensorType>(value.getType()));
  SmallVector<Value> vectors(rows.begin(), rows.end());
  t->storageRows = vectors;
  t->at = [this, vectors](int64_t r, int64_t e) {
    Gen g = gen();
    return g.toF32(vector::ExtractOp::create(g.b, g.loc, vectors[r], e));
  };
  return t;
}

/// A tile of a buffer at row `rowBase` (block id, CSR position or batched
/// row), loaded now.
TileRef TileBuilder::loadTile(Value value, Value memref, Value rowBase,
                              bool isScratch, bool streaming) {
  TileRef shape = loadedLayout(cast<VTensorType>(value.getType()));
  Type storage = cast<MemRefType>(memref.getType()).getElementType();
  TileRef t = tileFromRows(value, loadRowVectors(memref, rowBase, *shape,
                                                 storage, isScratch,
                                                 streaming));
  int64_t stride = isScratch ? t->d1 : t->realD1;
  int64_t rowsStored = isScratch ? t->d0 : t->realD0;
  if (!t->distributed && t->d0 == rowsStored && t->d1 == stride)
    t->load = [memref, rowBase, rowsStored, stride](Gen &g, Value r,
                                                    Value e) {
      Value base = g.mul(rowBase, g.idx(rowsStored * stride));
      Value at = g.add(base, g.add(g.mul(r, g.idx(stride)), e));
      return g.toF32(g.load(memref, at));
    };
  return t;
}

/// Every (r, e) element of a tile, in row-major order.
SmallVector<Value> TileBuilder::materialize(const Tile &t) {
  SmallVector<Value> values;
  for (int64_t r = 0; r < t.d0; ++r)
    for (int64_t e = 0; e < t.width(); ++e)
      values.push_back(t.at(r, e));
  return values;
}

/// Stores a tile's elements (already materialized) at row `rowBase` of a
/// buffer. Only real rows and columns are stored to a flow tensor; scratch
/// keeps the computed extents. A replicated tile is stored by the first lane
/// of the group.
void TileBuilder::storeTile(const Tile &t, ArrayRef<Value> values,
                            Value memref, Value rowBase, Type storage,
                            bool isScratch) {
  Gen g = gen();
  int64_t stride = isScratch ? t.d1 : t.realD1;
  int64_t rowsStored = isScratch ? t.d0 : t.realD0;
  int64_t colsStored = isScratch ? t.d1 : t.realD1;
  auto body = [&](Gen &s) {
    int64_t width = t.width();
    for (int64_t r = 0; r < std::min(t.d0, rowsStored); ++r) {
      Value base = s.add(s.mul(rowBase, s.idx(rowsStored * stride)),
                         s.idx(r * stride));
      if (t.distributed && t.d1 == colsStored) {
        // A vector per contiguous run of the lane's columns.
        int64_t run = runOf(t);
        auto vecType = VectorType::get({run}, storage);
        llvm::MaybeAlign align = runAlignment(stride, run, storage);
        for (int64_t k = 0; k < width / run; ++k) {
          Value vec = arith::ConstantOp::create(
              s.b, s.loc, vecType,
              DenseElementsAttr::get(vecType, s.b.getZeroAttr(storage)));
          for (int64_t e = 0; e < run; ++e)
            vec = vector::InsertOp::create(
                s.b, s.loc,
                s.fromF32(values[r * width + k * run + e], storage), vec, e);
          Value addr = s.add(base, column(t, k * run));
          vector::StoreOp::create(s.b, s.loc, vec, memref, ValueRange{addr},
                                  /*nontemporal=*/false, align);
        }
        continue;
      }
      for (int64_t e = 0; e < width; ++e) {
        if (!t.distributed && e >= colsStored)
          continue;
        Value v = s.fromF32(values[r * width + e], storage);
        if (!t.distributed) {
          s.store(v, memref, s.add(base, s.idx(e)));
          continue;
        }
        Value col = column(t, e);
        s.ifThen(s.lt(col, s.idx(colsStored)), [&](Gen &in) {
          in.store(v, memref, in.add(base, col));
        });
      }
    }
  };
  if (t.distributed) {
    body(g);
    return;
  }
  g.ifThen(g.cmpI(arith::CmpIPredicate::eq, laneInItem, g.idx(0)), body);
}
