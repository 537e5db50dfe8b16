//===- SetConfig.cpp - Retarget a flow's knobs and re-infer its types -----===//

#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Transforms/Passes.h"

#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXSETCONFIG
#include "Vortex/Transforms/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;

namespace {

int64_t broadcast(int64_t a, int64_t b) { return a == 1 ? b : a; }

/// The inner shape [D0, D1] an op's first result has under its operands'
/// current types (the op's shape rule).
std::pair<int64_t, int64_t> inferInner(Operation *op) {
  auto in = [&](unsigned i) {
    return cast<VTensorType>(op->getOperand(i).getType());
  };
  auto out = cast<VTensorType>(op->getResult(0).getType());
  return TypeSwitch<Operation *, std::pair<int64_t, int64_t>>(op)
      .Case<GeMMOp>([&](GeMMOp g) {
        return std::pair<int64_t, int64_t>{
            in(1).getD0(), in(0).getD0() / g.getNumGroups()};
      })
      .Case<GeMVOp>([&](auto) { return std::pair<int64_t, int64_t>{1, 1}; })
      .Case<ReductionOpInterface>([&](ReductionOpInterface red) {
        int64_t dim = red.getReducedDim();
        int64_t d0 = in(0).getD0(), d1 = in(0).getD1();
        if (auto factor = op->getAttrOfType<IntegerAttr>("factor"))
          return dim == 1
                     ? std::pair<int64_t, int64_t>{d0 / factor.getInt(), d1}
                     : std::pair<int64_t, int64_t>{d0, d1 / factor.getInt()};
        if (dim == 0)
          return std::pair<int64_t, int64_t>{d0, d1};
        return dim == 1 ? std::pair<int64_t, int64_t>{1, d1}
                        : std::pair<int64_t, int64_t>{d0, 1};
      })
      .Case<TransposeOp>([&](auto) {
        return std::pair<int64_t, int64_t>{in(0).getD1(), in(0).getD0()};
      })
      .Case<ReshapeOp>([&](auto) {
        return std::pair<int64_t, int64_t>{out.getD0(), out.getD1()};
      })
      .Case<KronOp>([&](KronOp kron) {
        int64_t e[3];
        for (unsigned a = 1; a <= 2; ++a)
          e[a] = llvm::is_contained(kron.getDims(), a)
                     ? in(0).getInner(a) * in(1).getInner(a)
                     : broadcast(in(0).getInner(a), in(1).getInner(a));
        return std::pair<int64_t, int64_t>{e[1], e[2]};
      })
      .Default([&](Operation *) {
        if (op->getNumOperands() >= 2 &&
            isa<BinaryElementwiseOpInterface>(op))
          return std::pair<int64_t, int64_t>{
              broadcast(in(0).getD0(), in(1).getD0()),
              broadcast(in(0).getD1(), in(1).getD1())};
        return std::pair<int64_t, int64_t>{in(0).getD0(), in(0).getD1()};
      });
}

void retype(Value v, int64_t d0, int64_t d1) {
  auto t = cast<VTensorType>(v.getType());
  v.setType(t.withShape({t.getL(), d0, d1}).withExplicitPadding(false));
}

struct VortexSetConfigPass
    : public vortex::impl::VortexSetConfigBase<VortexSetConfigPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // "Keep" is exactly the default sentinel; anything else out of range is
    // an error, not a silent keep.
    auto bad = [&](StringRef name, auto value) {
      module.emitError("vortex-set-config: ")
          << name << " = " << value << " is not a valid value (see "
          << "--help; the flow's own bounds are in docs/contract.md)";
      signalPassFailure();
    };
    if (groupSize < 0)
      return bad("group-size", int64_t(groupSize));
    if (queryTokens < 0 || queryTokens > 64)
      return bad("query-tokens", int64_t(queryTokens));
    if (topkVal < -1)
      return bad("topk-val", int64_t(topkVal));
    if (reservedBos < -1)
      return bad("reserved-bos", int64_t(reservedBos));
    if (reservedEos < -1)
      return bad("reserved-eos", int64_t(reservedEos));
    if (std::isnan(topkRatio) || (topkRatio < 0 && topkRatio != -1.0))
      return bad("topk-ratio", double(topkRatio));
    WalkResult result = module.walk([&](FlowOp flow) {
      FlowConfigAttr c = flow.getConfig();
      MLIRContext *ctx = flow.getContext();
      int64_t tokens = queryTokens > 0 ? int64_t(queryTokens)
                                       : flow.getQueryTokens();
      // Out-of-range values get the config verifier's diagnostic, at the
      // flow, instead of an invalid attribute.
      auto config = FlowConfigAttr::getChecked(
          [&] {
            return flow.emitOpError("vortex-set-config: ");
          },
          ctx, c.getBlockSize(), c.getPageSize(), c.getHeadDim(),
          groupSize > 0 ? groupSize : c.getGroupSize(),
          topkVal >= 0 ? topkVal : c.getTopkVal(),
          topkRatio >= 0 ? FloatAttr::get(Float64Type::get(ctx), topkRatio)
                         : c.getTopkRatio(),
          reservedBos >= 0 ? reservedBos : c.getReservedBos(),
          reservedEos >= 0 ? reservedEos : c.getReservedEos(),
          c.getIntermediateDtype(), c.getKvDtype(), c.getKvLoraRank(),
          c.getRopeDim());
      if (!config)
        return WalkResult::interrupt();
      flow.setConfigAttr(config);
      // Block arguments: q follows the config, the rest is unchanged.
      BlockArgument q = flow.getIndexerBody().getArgument(0);
      retype(q, tokens * config.getGroupSize(), config.getHeadDim());
      for (Block *body : {&flow.getCacheBody(), &flow.getIndexerBody()})
        for (BlockArgument arg : body->getArguments())
          retype(arg, cast<VTensorType>(arg.getType()).getD0(),
                 cast<VTensorType>(arg.getType()).getD1());
      // Results in program order (kernels: their bodies, then results).
      flow.walk<WalkOrder::PostOrder>([&](Operation *op) {
        if (isa<FlowOp, YieldOp>(op) || op->getNumResults() == 0)
          return;
        if (auto kernel = dyn_cast<KernelOp>(op)) {
          auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
          for (auto [r, y] : llvm::zip(kernel.getResults(), yield.getValues()))
            r.setType(y.getType());
          return;
        }
        if (isa<TrtllmTopKOp>(op))
          return;
        auto [d0, d1] = inferInner(op);
        retype(op->getResult(0), d0, d1);
      });
      return WalkResult::advance();
    });
    if (result.wasInterrupted() || failed(verify(module)))
      signalPassFailure();
  }
};

} // namespace
