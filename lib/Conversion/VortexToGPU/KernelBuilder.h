//===- KernelBuilder.h - Shared helpers of the GPU code generator -*- C++ -*-===//
//
// Scalar and memory helpers for emitting gpu.func bodies, and the kernel
// records the manifest is built from. With Collectives.h, the base of every
// kernel library (VortexGPUKernelBuilder: KernelBuilder.cpp,
// Collectives.cpp). The kernels' entry points are Kernels.h (the pass's
// library, VortexToGPU) and Selection/Selection.h (VortexGPUSelection).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_KERNELBUILDER_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_KERNELBUILDER_H

#include "Vortex/Conversion/Passes.h"
#include "Vortex/Conversion/Utils/ScalarBuilder.h"
#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Dialect/VortexOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include <set>

namespace mlir::vortex::gpugen {

using abi::KernelRecord;
using abi::Param;
using abi::Role;
using abi::Step;
using abi::TensorRecord;

/// Scalar helpers plus the memory and control-flow ones of kernel bodies.
struct Gen : ScalarBuilder {
  Gen(OpBuilder &b, Location loc) : ScalarBuilder(b, loc) {}

  /// Storage element -> f32 (fp8 included: vortex-gpu-lower-fp8 makes its
  /// extf one that LLVM 22's NVPTX can select).
  Value toF32(Value v) {
    Type t = v.getType();
    if (t.isF32())
      return v;
    return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  }
  /// f32 -> storage element (round to nearest even).
  Value fromF32(Value v, Type storage) {
    if (storage.isF32())
      return v;
    return arith::TruncFOp::create(b, loc, storage, v);
  }

  Value load(Value memref, Value index) {
    return memref::LoadOp::create(b, loc, memref, ValueRange{index});
  }
  void store(Value v, Value memref, Value index) {
    memref::StoreOp::create(b, loc, v, memref, ValueRange{index});
  }

  /// Records a failed guard in the runtime's status buffer (docs/gpu.md,
  /// "Guards"): ORs `flag` into word 0, stores the offending value and its
  /// position (one of concurrent failures wins) and counts it. Atomic and
  /// without a fence: the runtime reads it at its next check.
  void recordStatus(Value status, int32_t flag, Value value, Value pos) {
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::ori, i32(flag),
                                status, ValueRange{idx(0)});
    store(toI32(value), status, idx(1));
    store(toI32(pos), status, idx(2));
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, i32(1),
                                status, ValueRange{idx(3)});
  }
  Value notI(Value c) {
    return arith::XOrIOp::create(
        b, loc, c, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
  }
  /// The extent a runtime passed for a 1-D buffer argument.
  Value extent(Value memref) { return memref::DimOp::create(b, loc, memref, 0); }

  scf::ForOp forLoop(Value lb, Value ub, ValueRange inits,
                     function_ref<SmallVector<Value>(Gen &, Value,
                                                     ValueRange)>
                         body) {
    return scf::ForOp::create(
        b, loc, lb, ub, idx(1), inits,
        [&](OpBuilder &nb, Location l, Value iv, ValueRange args) {
          Gen g{nb, l};
          scf::YieldOp::create(nb, l, body(g, iv, args));
        });
  }
  void ifThen(Value cond, function_ref<void(Gen &)> thenFn) {
    scf::IfOp::create(b, loc, cond, [&](OpBuilder &nb, Location l) {
      Gen g{nb, l};
      thenFn(g);
      scf::YieldOp::create(nb, l);
    });
  }
  SmallVector<Value> ifElse(Value cond, TypeRange types,
                            function_ref<SmallVector<Value>(Gen &)> thenFn,
                            function_ref<SmallVector<Value>(Gen &)> elseFn) {
    auto op = scf::IfOp::create(
        b, loc, cond,
        [&](OpBuilder &nb, Location l) {
          Gen g{nb, l};
          scf::YieldOp::create(nb, l, thenFn(g));
        },
        [&](OpBuilder &nb, Location l) {
          Gen g{nb, l};
          scf::YieldOp::create(nb, l, elseFn(g));
        });
    return SmallVector<Value>(op.getResults());
  }
};

/// The computed (padded once padding is explicit) inner extent of `t`.
int64_t computeExtent(VTensorType t, unsigned dim);

/// Context of one flow being compiled: the gpu.module, the buffers the flow
/// tensors live in, and the manifest records.
struct FlowContext {
  FlowOp flow;
  FlowConfigAttr config;
  gpu::GPUModuleOp module;
  /// The pass's options, as Passes.td declares them (the knobs' one home;
  /// docs/Passes/VortexConversionPasses.md says what each does).
  ConvertVortexToGPUOptions options;
  /// Top-k op -> the save of its score that its kernel stores at more than
  /// options.topkSavesMinRows rows; the score kernel stores it at fewer
  /// (docs/gpu.md, "Saves in the top-k").
  DenseMap<Operation *, SaveOp> deferredSaves;
  /// Whether `save` is stored by a top-k kernel.
  bool isDeferred(SaveOp save) const {
    return llvm::any_of(deferredSaves, [&](const auto &entry) {
      return entry.second == save;
    });
  }
  /// Value -> name of the buffer that holds it across kernels.
  DenseMap<Value, std::string> bufferOf;
  /// The flow tensors, plus the scratch and kernels added here.
  abi::FlowABI abi;
  unsigned nextScratch = 0;

  /// A scratch buffer for `v` (ragged: [total, D0', D1'], batched:
  /// [rows, D0', D1'], parameter: [1, D0', D1']; i32 for index values, else
  /// f32).
  std::string allocScratch(Value v);
  /// A scratch buffer of shape [lead, d0, d1] that holds no flow value.
  std::string allocScratchBuffer(StringRef lead, int64_t d0, int64_t d1,
                                 Type elementType);
  /// The status buffer (Role::Status) the guards of every kernel share.
  std::string statusBuffer();
};

//===----------------------------------------------------------------------===//
// Per-row kernels (one CTA per dense CSR row)
//===----------------------------------------------------------------------===//

/// Row bounds, budget and the scored range of row `r`.
struct RowInfo {
  Value start, end, n, budget, needs, lo, hi;
  /// Whether indptr[r] and indptr[r + 1] were used as read.
  Value exact;
};

/// Row `r` of the dense CSR, its bounds clamped to `0 <= start <= end <=
/// limit` (the positions the row's buffers hold): a malformed indptr reads
/// and writes nothing outside them (docs/gpu.md "Guards"). The budget is
/// max(minBudget, int(n * ratio)) (emitRowBudget), or minBudget alone when
/// `ratio` is null; the scored range leaves out `bos` and `eos` blocks.
struct RowKnobs {
  Value minBudget, ratio, bos, eos;
};
RowInfo rowInfo(Gen &g, const RowKnobs &knobs, Value indptr, Value r,
                Value limit);
/// The same with the flow's knobs as constants. The top-k takes them as
/// parameters instead, so that its text is the same in every flow
/// (docs/gpu.md, "Prebuilt kernels").
RowInfo rowInfo(Gen &g, FlowConfigAttr cfg, Value indptr, Value r,
                Value limit);

/// Records a per-row indexer kernel (grid: one CTA per dense CSR row); its
/// shared bytes are those of its workgroup attributions, each at its
/// declared alignment (`llvm.align`).
void recordRowKernel(FlowContext &ctx, gpu::GPUFuncOp func, int64_t threads,
                     ArrayRef<Param> params, ArrayRef<std::string> reads,
                     ArrayRef<std::string> writes);

/// for (p = lo + tid; p < hi; p += threads) body(p). The body runs under a
/// per-thread condition: no barrier may be in it.
scf::ForOp strided(Gen &g, Value lo, Value hi, Value tid, int64_t threads,
                   ValueRange inits,
                   function_ref<SmallVector<Value>(Gen &, Value, ValueRange)>
                       body);

/// Creates an empty kernel with the given parameters; returns it with the
/// builder positioned at the start of its body. Buffers are memref<?xT>.
gpu::GPUFuncOp createKernel(FlowContext &ctx, OpBuilder &b, Location loc,
                            StringRef name, ArrayRef<Param> params,
                            int64_t threads);

/// Marks every scf.for of `func` so that LLVM does not unroll it by a
/// runtime count (an unrolled body plus a remainder loop): for kernels
/// whose loops run a few iterations, where the copies only cost compile
/// time. Loops of a constant trip count may still be unrolled.
void keepLoopsRolled(gpu::GPUFuncOp func);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_KERNELBUILDER_H
