//===- SplitCustomCalls.cpp - Stages of an indexer around its custom ops --===//
//
// vortex-split-custom-calls (Passes.td): a flow whose indexer calls n
// registered torch functions becomes n + 1 stage flows, each compiled by
// the existing pipelines; the runtime runs stage, call, stage. The names
// of the cut values are the runtime's protocol: `c<k>_in<j>` (operand j of
// call k, exported by stage k), `c<k>_out` (its result), `s<k>_<m>` (a value
// of stage k a later stage uses).
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Dialect/VortexStageOps.h"
#include "Vortex/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXSPLITCUSTOMCALLS
#include "Vortex/Transforms/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;

namespace {

/// The cut of one flow: each indexer op's stage (calls: the index of the
/// call), and the name every value crossing a cut travels under.
struct Cut {
  DenseMap<Operation *, unsigned> stageOf;
  SmallVector<CustomCallOp> calls;
  /// Values defined in a stage (or by a call) and used in a later one.
  DenseMap<Value, std::string> crossing;
};

/// Where a value is defined: its stage (block arguments: every stage), or
/// for a call's result the call's index + 1 (the first stage that sees it).
static std::optional<unsigned> stageOfDef(const Cut &cut, Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  unsigned s = cut.stageOf.lookup(def);
  return isa<CustomCallOp>(def) ? s + 1 : s;
}

/// Whether stage k reads `v` through a stage_in: a value of an earlier
/// stage, or any call's result (no stage defines it).
static bool isImport(const Cut &cut, Value v, unsigned k) {
  Operation *def = v.getDefiningOp();
  return def && (isa<CustomCallOp>(def) || cut.stageOf.lookup(def) < k);
}

static LogicalResult checkStageValue(Operation *at, Value v) {
  auto t = cast<VTensorType>(v.getType());
  if ((t.isRagged() || t.isBatched()) && !t.needsPadding() &&
      isa<FloatType>(t.getElementType()))
    return success();
  return at->emitOpError("cannot be split around a custom op: the value ")
         << t
         << " crosses a stage cut, and a cut carries ragged or batched float "
            "values with power-of-two inner sizes";
}

static FailureOr<Cut> analyze(FlowOp flow) {
  Cut cut;
  Block &body = flow.getIndexerBody();
  unsigned stage = 0;
  for (Operation &op : body) {
    if (isa<KernelOp>(op) && !op.getRegion(0).getOps<CustomCallOp>().empty())
      return op.emitOpError("holds a custom op; split before vortex-fuse");
    cut.stageOf[&op] = stage;
    if (auto call = dyn_cast<CustomCallOp>(op)) {
      cut.calls.push_back(call);
      ++stage;
    }
  }
  // A load sees the start of the step: a save in an earlier stage would
  // already be applied when a later stage runs.
  DenseMap<Value, unsigned> firstSave;
  for (Operation &op : body)
    if (auto save = dyn_cast<SaveOp>(op))
      firstSave.try_emplace(save.getField(), cut.stageOf[&op]);
  for (Operation &op : body)
    if (auto load = dyn_cast<LoadOp>(op)) {
      auto it = firstSave.find(load.getField());
      if (it != firstSave.end() && it->second < cut.stageOf[&op])
        return load.emitOpError("reads a field saved before a custom op "
                                "that precedes it; a load sees the start of "
                                "the step, which a split step cannot keep");
    }
  unsigned counter = 0;
  for (Operation &op : body)
    for (Value r : op.getResults()) {
      std::optional<unsigned> def = stageOfDef(cut, r);
      // Call k's operands are exported by stage k: a value of an earlier
      // stage crosses to it.
      bool later = llvm::any_of(r.getUsers(), [&](Operation *u) {
        return cut.stageOf.lookup(u) > *def;
      });
      if (isa<CustomCallOp>(op)) {
        cut.crossing[r] = "c" + std::to_string(cut.stageOf[&op]) + "_out";
        if (failed(checkStageValue(&op, r)))
          return failure();
      } else if (later) {
        // An operand of the call ending its stage travels under the call's
        // name, so that the stage exports it once.
        std::string name;
        for (OpOperand &use : r.getUses())
          if (auto call = dyn_cast<CustomCallOp>(use.getOwner());
              call && name.empty() && cut.stageOf.lookup(call) == *def)
            name = "c" + std::to_string(*def) + "_in" +
                   std::to_string(use.getOperandNumber());
        cut.crossing[r] = !name.empty() ? name
                                        : "s" + std::to_string(*def) + "_" +
                                              std::to_string(counter++);
        if (failed(checkStageValue(&op, r)))
          return failure();
      }
    }
  for (CustomCallOp call : cut.calls)
    for (Value v : call.getInputs())
      if (failed(checkStageValue(call, v)))
        return failure();
  return cut;
}

/// Stage `k` of `flow` (a clone, renamed), cut by `cut` (of the original).
static void buildStage(FlowOp flow, const Cut &cut, unsigned k,
                       OpBuilder &b) {
  b.setInsertionPoint(flow);
  auto stage = cast<FlowOp>(b.clone(*flow));
  stage.setSymName((flow.getSymName() + "_stage" + Twine(k)).str());
  Block &orig = flow.getIndexerBody(), &body = stage.getIndexerBody();
  // The clone's ops, paired with the original's (same order).
  SmallVector<std::pair<Operation *, Operation *>> ops;
  for (auto [o, c] : llvm::zip(orig, body))
    ops.push_back({&o, &c});
  DenseMap<Value, Value> toClone;
  for (auto [o, c] : ops)
    for (auto [ro, rc] : llvm::zip(o->getResults(), c->getResults()))
      toClone[ro] = rc;
  for (auto [a, c] : llvm::zip(orig.getArguments(), body.getArguments()))
    toClone[a] = c;
  auto inStage = [&](Operation *o) {
    return !isa<CustomCallOp>(o) && cut.stageOf.lookup(o) == k;
  };
  // Imports: every crossing value a stage-k op uses, defined earlier, at
  // the top of the body in first-use order.
  OpBuilder ib(&body, body.begin());
  DenseMap<Value, Value> imported;
  auto importOf = [&](Value v) -> Value {
    auto [it, fresh] = imported.try_emplace(v, Value());
    if (fresh)
      it->second = StageInOp::create(ib, v.getLoc(), v.getType(),
                                     cut.crossing.lookup(v));
    return it->second;
  };
  for (auto [o, c] : ops) {
    if (!inStage(o))
      continue;
    for (OpOperand &use : c->getOpOperands()) {
      Value ov = o->getOperand(use.getOperandNumber());
      if (isImport(cut, ov, k))
        use.set(importOf(ov));
    }
  }
  // Exports: stage k's crossing values, and call k's operands.
  Operation *end = nullptr;
  for (auto [o, c] : ops)
    if (k < cut.calls.size() && o == CustomCallOp(cut.calls[k]).getOperation())
      end = c;
  if (end) {
    b.setInsertionPoint(end);
    for (auto [o, c] : ops) {
      if (!inStage(o))
        continue;
      for (Value r : o->getResults())
        if (cut.crossing.count(r))
          StageOutOp::create(b, r.getLoc(), toClone[r],
                             cut.crossing.lookup(r));
    }
    CustomCallOp call = cut.calls[k];
    for (auto [j, v] : llvm::enumerate(call.getInputs())) {
      std::string name = ("c" + Twine(k) + "_in" + Twine(j)).str();
      if (!isImport(cut, v, k) && cut.crossing.lookup(v) == name)
        continue; // exported above, under this name
      Value local = isImport(cut, v, k) ? importOf(v) : toClone[v];
      StageOutOp::create(b, call.getLoc(), local, name);
    }
  }
  // Everything of other stages goes, users first.
  for (auto [o, c] : llvm::reverse(ops))
    if (!inStage(o))
      c->erase();
}

struct VortexSplitCustomCallsPass
    : public vortex::impl::VortexSplitCustomCallsBase<
          VortexSplitCustomCallsPass> {
  void runOnOperation() override {
    SmallVector<FlowOp> flows(getOperation().getOps<FlowOp>());
    for (FlowOp flow : flows) {
      if (!flow.getIndexerBody()
               .walk([](CustomCallOp) { return WalkResult::interrupt(); })
               .wasInterrupted())
        continue;
      FailureOr<Cut> cut = analyze(flow);
      if (failed(cut))
        return signalPassFailure();
      OpBuilder b(flow);
      for (unsigned k = 0; k <= cut->calls.size(); ++k)
        buildStage(flow, *cut, k, b);
      flow.erase();
    }
  }
};

} // namespace
