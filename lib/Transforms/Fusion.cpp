//===- Fusion.cpp - vortex_torch W-fusion into vortex.kernel regions ------===//
//
// Union-find over the ops of a flow body, merging W groups whenever the
// merged group graph stays acyclic (vortex_torch `_fuse_w_ops`), then one
// vortex.kernel per W group in topological order.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXFUSE
#include "Vortex/Transforms/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;

namespace {

bool isWorkloadOp(Operation *op) {
  auto sched = dyn_cast<ScheduledOpInterface>(op);
  return sched && sched.getSchedule() == Schedule::W;
}

/// The field an op reads or writes through its memory effects, if any.
Value touchedField(Operation *op, bool &writes) {
  Value written = getWrittenField(op);
  writes = bool(written);
  if (written)
    return written;
  if (auto l = dyn_cast<LoadOp>(op))
    return l.getField();
  return {};
}

class BodyFusion {
public:
  explicit BodyFusion(Block &block) : block(block) {
    for (Operation &op : block)
      ops.push_back(&op);
    for (auto [i, op] : llvm::enumerate(ops))
      index[op] = i;
    edges.resize(ops.size());
    // Data edges.
    for (auto [i, op] : llvm::enumerate(ops))
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); def && index.count(def))
          edges[index[def]].insert(i);
    // Memory order on each field: a load precedes the saves of its field
    // (it reads the pre-step value); writers keep their program order.
    for (size_t i = 0; i < ops.size(); ++i) {
      bool wi;
      Value fi = touchedField(ops[i], wi);
      if (!fi)
        continue;
      for (size_t j = 0; j < ops.size(); ++j) {
        bool wj;
        Value fj = touchedField(ops[j], wj);
        if (i == j || fj != fi)
          continue;
        if ((!wi && wj) || (wi && wj && i < j))
          edges[i].insert(j);
      }
    }
    for (size_t i = 0; i < ops.size(); ++i)
      groups.insert(i);
  }

  void run() {
    // Merge W groups until no pair can merge (vortex_torch restarts the
    // pair scan after every merge).
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<size_t> reps = workloadLeaders();
      for (size_t a = 0; a < reps.size() && !changed; ++a)
        for (size_t b = a + 1; b < reps.size() && !changed; ++b)
          if (canMerge(reps[a], reps[b])) {
            groups.unionSets(reps[a], reps[b]);
            changed = true;
          }
    }
    materialize();
  }

private:
  Block &block;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, size_t> index;
  SmallVector<llvm::SetVector<size_t>> edges;
  llvm::EquivalenceClasses<size_t> groups;

  size_t leader(size_t i) { return groups.getLeaderValue(i); }

  SmallVector<size_t> workloadLeaders() {
    llvm::SetVector<size_t> leaders;
    for (size_t i = 0; i < ops.size(); ++i)
      if (isWorkloadOp(ops[i]))
        leaders.insert(leader(i));
    return leaders.takeVector();
  }

  /// Group-level successors of group `g`.
  llvm::SetVector<size_t> successors(size_t g) {
    llvm::SetVector<size_t> succ;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (leader(i) != g)
        continue;
      for (size_t j : edges[i])
        if (leader(j) != g)
          succ.insert(leader(j));
    }
    return succ;
  }

  /// True iff `to` is reachable from `from` through a third group.
  bool indirectPath(size_t from, size_t to) {
    SmallVector<size_t> stack;
    DenseSet<size_t> seen;
    for (size_t s : successors(from))
      if (s != to && seen.insert(s).second)
        stack.push_back(s);
    while (!stack.empty()) {
      size_t g = stack.pop_back_val();
      for (size_t s : successors(g)) {
        if (s == to)
          return true;
        if (seen.insert(s).second)
          stack.push_back(s);
      }
    }
    return false;
  }

  bool canMerge(size_t a, size_t b) {
    return !indirectPath(a, b) && !indirectPath(b, a);
  }

  void materialize() {
    // Kahn over groups, ties to the group whose first op comes first.
    SmallVector<size_t> leaders;
    DenseMap<size_t, size_t> first;
    for (size_t i = 0; i < ops.size(); ++i)
      if (!first.count(leader(i))) {
        first[leader(i)] = i;
        leaders.push_back(leader(i));
      }
    DenseMap<size_t, unsigned> indegree;
    for (size_t g : leaders)
      for (size_t s : successors(g))
        ++indegree[s];
    SmallVector<size_t> order;
    DenseSet<size_t> placed;
    while (order.size() < leaders.size()) {
      size_t best = SIZE_MAX;
      for (size_t g : leaders)
        if (!placed.count(g) && indegree[g] == 0 &&
            (best == SIZE_MAX || first[g] < first[best]))
          best = g;
      assert(best != SIZE_MAX && "fusion produced a cycle");
      placed.insert(best);
      order.push_back(best);
      for (size_t s : successors(best))
        --indegree[s];
    }

    for (size_t g : order) {
      SmallVector<Operation *> members;
      for (size_t i = 0; i < ops.size(); ++i)
        if (leader(i) == g)
          members.push_back(ops[i]);
      for (Operation *op : members)
        op->moveBefore(&block, block.end());
      if (isWorkloadOp(members.front()))
        wrapInKernel(members);
    }
  }

  void wrapInKernel(ArrayRef<Operation *> members) {
    DenseSet<Operation *> inside(members.begin(), members.end());
    SmallVector<Value> escaping;
    for (Operation *op : members)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !inside.count(block.findAncestorOpInBlock(*user));
            }))
          escaping.push_back(r);
    OpBuilder b(members.front());
    auto kernel = KernelOp::create(b, members.front()->getLoc(),
                                   ValueRange(escaping).getTypes());
    Block *body = new Block();
    kernel.getBody().push_back(body);
    for (Operation *op : members)
      op->moveBefore(body, body->end());
    OpBuilder yieldBuilder = OpBuilder::atBlockEnd(body);
    YieldOp::create(yieldBuilder, members.back()->getLoc(), escaping);
    for (auto [value, result] : llvm::zip(escaping, kernel.getResults()))
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !kernel->isProperAncestor(use.getOwner());
      });
  }
};

struct VortexFusePass : public vortex::impl::VortexFuseBase<VortexFusePass> {
  void runOnOperation() override {
    // A custom op is a host call into torch: a compiled step is one
    // program, so the step is split around it first (vortex-split-custom-
    // calls; docs/python.md, "Custom ops"). Refused here, at the first
    // pass of both pipelines.
    WalkResult custom = getOperation().walk([&](CustomCallOp op) {
      op.emitOpError("'")
          << op.getCallee()
          << "' is a custom op (a registered torch function); a compiled "
             "step cannot call one: split the step around it first "
             "(--vortex-split-custom-calls, which vortex.compile runs)";
      return WalkResult::interrupt();
    });
    if (custom.wasInterrupted())
      return signalPassFailure();
    getOperation().walk([&](FlowOp flow) {
      for (Block *body : {&flow.getCacheBody(), &flow.getIndexerBody()}) {
        // Already fused bodies are left as they are (idempotence).
        if (llvm::any_of(*body, [](Operation &op) { return isa<KernelOp>(op); }))
          continue;
        BodyFusion(*body).run();
      }
    });
  }
};

} // namespace
