//===- LowerSubgroupReduce.cpp - Subgroup ops to shuffles -----------------===//
//
// MLIR 22's convert-gpu-to-nvvm cannot legalize gpu.subgroup_reduce (bar i32
// with has-redux) nor gpu.subgroup_id/num_subgroups/subgroup_size. Expand
// them here into shuffles and thread-id arithmetic that it does lower.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Transforms/GPU/Passes.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXGPULOWERSUBGROUPREDUCE
#include "Vortex/Transforms/GPU/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;

namespace {

/// Upstream breaks vectors only into pieces narrower than the shuffle, so a
/// vector of 32- or 64-bit elements would stay: reduce it per element.
struct UnrollWideElementReduce final
    : OpRewritePattern<gpu::SubgroupReduceOp> {
  UnrollWideElementReduce(MLIRContext *ctx, unsigned shuffleBitwidth)
      : OpRewritePattern(ctx), shuffleBitwidth(shuffleBitwidth) {}

  LogicalResult matchAndRewrite(gpu::SubgroupReduceOp op,
                                PatternRewriter &rewriter) const override {
    auto vecTy = dyn_cast<VectorType>(op.getType());
    if (!vecTy || vecTy.getNumElements() < 2 ||
        vecTy.getElementTypeBitWidth() < shuffleBitwidth)
      return rewriter.notifyMatchFailure(op, "handled upstream");
    Location loc = op.getLoc();
    SmallVector<Value> elements;
    for (int64_t i = 0, e = vecTy.getNumElements(); i < e; ++i) {
      Value element =
          vector::ExtractOp::create(rewriter, loc, op.getValue(), i);
      elements.push_back(gpu::SubgroupReduceOp::create(
          rewriter, loc, element, op.getOp(), op.getUniform(),
          op.getClusterSize(), op.getClusterStride()));
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, vecTy, elements);
    return success();
  }

private:
  unsigned shuffleBitwidth;
};

struct LowerSubgroupSize final : OpRewritePattern<gpu::SubgroupSizeOp> {
  LowerSubgroupSize(MLIRContext *ctx, unsigned subgroupSize)
      : OpRewritePattern(ctx), subgroupSize(subgroupSize) {}

  LogicalResult matchAndRewrite(gpu::SubgroupSizeOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantIndexOp>(op, subgroupSize);
    return success();
  }

private:
  unsigned subgroupSize;
};

/// num_subgroups = ceil(blockDim.x * blockDim.y * blockDim.z / subgroupSize).
struct LowerNumSubgroups final : OpRewritePattern<gpu::NumSubgroupsOp> {
  LowerNumSubgroups(MLIRContext *ctx, unsigned subgroupSize)
      : OpRewritePattern(ctx), subgroupSize(subgroupSize) {}

  LogicalResult matchAndRewrite(gpu::NumSubgroupsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value threads;
    for (gpu::Dimension dim :
         {gpu::Dimension::x, gpu::Dimension::y, gpu::Dimension::z}) {
      Value d = gpu::BlockDimOp::create(rewriter, loc, dim);
      threads = threads ? arith::MulIOp::create(rewriter, loc, threads, d) : d;
    }
    // (threads + size - 1) / size: arith.ceildivui has no LLVM lowering.
    Value sizeMinusOne =
        arith::ConstantIndexOp::create(rewriter, loc, subgroupSize - 1);
    Value size = arith::ConstantIndexOp::create(rewriter, loc, subgroupSize);
    Value rounded = arith::AddIOp::create(rewriter, loc, threads, sizeMinusOne);
    rewriter.replaceOpWithNewOp<arith::DivUIOp>(op, rounded, size);
    return success();
  }

private:
  unsigned subgroupSize;
};

struct VortexGPULowerSubgroupReducePass final
    : vortex::impl::VortexGPULowerSubgroupReduceBase<
          VortexGPULowerSubgroupReducePass> {
  using Base::Base;

  void runOnOperation() override {
    unsigned subgroupSize = this->subgroupSize;
    if (!llvm::isPowerOf2_32(subgroupSize)) {
      emitError(getOperation()->getLoc())
          << "subgroup-size must be a power of two, got " << subgroupSize;
      return signalPassFailure();
    }
    // Check up front what the shuffle patterns would only report mid-rewrite.
    WalkResult fits = getOperation()->walk([&](gpu::SubgroupReduceOp op) {
      if (op.getClusterSize() && *op.getClusterSize() > subgroupSize) {
        op.emitOpError() << "cluster size " << *op.getClusterSize()
                         << " exceeds the subgroup size " << subgroupSize;
        return WalkResult::interrupt();
      }
      if (op.getClusterStride() * op.getClusterSize().value_or(1) >
          subgroupSize) {
        op.emitOpError() << "cluster stride " << op.getClusterStride()
                         << " does not fit the subgroup size " << subgroupSize;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (fits.wasInterrupted())
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    constexpr unsigned shuffleBitwidth = 32;
    populateGpuBreakDownSubgroupReducePatterns(patterns, shuffleBitwidth,
                                               /*benefit=*/2);
    patterns.add<UnrollWideElementReduce>(ctx, shuffleBitwidth);
    // 32-bit shuffles first; 64-bit scalars fall through to 64-bit shuffles.
    populateGpuLowerSubgroupReduceToShufflePatterns(
        patterns, subgroupSize, shuffleBitwidth, /*benefit=*/2);
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
        patterns, subgroupSize, shuffleBitwidth, /*benefit=*/2);
    populateGpuLowerSubgroupReduceToShufflePatterns(patterns, subgroupSize,
                                                    2 * shuffleBitwidth);
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
        patterns, subgroupSize, 2 * shuffleBitwidth);
    populateGpuSubgroupIdPatterns(patterns);
    patterns.add<LowerSubgroupSize, LowerNumSubgroups>(ctx, subgroupSize);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      emitError(getOperation()->getLoc())
          << "subgroup op lowering did not converge";
      return signalPassFailure();
    }

    WalkResult left = getOperation()->walk([](gpu::SubgroupReduceOp op) {
      op.emitOpError("could not be expanded into shuffles");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
