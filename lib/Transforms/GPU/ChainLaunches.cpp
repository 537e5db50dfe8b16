//===- ChainLaunches.cpp - Programmatic dependent launch of a step --------===//
//
// A step's kernels run one after the other on a stream. Launched the
// ordinary way, the next kernel's launch begins only after the previous one
// has finished and flushed; at small batches that gap is a large share of
// the step. griddepcontrol (sm_90+) lets the next grid be scheduled early
// and wait in hardware, so every kernel after the first waits before its
// first memory access, and every kernel before the last lets its dependent
// launch as soon as all of its CTAs have started.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Transforms/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXGPUCHAINLAUNCHES
#include "Vortex/Transforms/GPU/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
namespace abi = mlir::vortex::abi;
using mlir::vortex::LaunchAttr;
using mlir::vortex::LaunchParamAttr;
using mlir::vortex::StepAttr;

namespace {

/// A launched kernel, and what it must do at its entry.
struct Chaining {
  gpu::GPUFuncOp func;
  bool wait = false, trigger = false;
  /// The kernel's parameter names (a buffer's tensor, or "" for a scalar),
  /// one per argument, and the tensors earlier launches of its step read
  /// and write: what touches neither may come before the wait.
  SmallVector<std::string> params;
  llvm::StringSet<> readBefore, writtenBefore;
  /// An earlier launch lists no reads (writes): it may read (write)
  /// anything.
  bool anyReadBefore = false, anyWrittenBefore = false;

  /// The tensor of buffer argument `v` of the kernel, or "" (a scalar, a
  /// value that is no argument, or params that do not match the kernel).
  StringRef tensorOf(Value v) const {
    gpu::GPUFuncOp f = func;
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &f.getBody().front() ||
        arg.getArgNumber() >= f.getNumArguments() ||
        f.getNumArguments() != params.size())
      return {};
    return params[arg.getArgNumber()];
  }
  /// Whether `v` is one of the kernel's workgroup or private attributions:
  /// memory no other launch can touch.
  bool isAttribution(Value v) const {
    gpu::GPUFuncOp f = func;
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &f.getBody().front() &&
           arg.getArgNumber() >= f.getNumArguments();
  }
  /// Whether a load of `memref` may come before the wait.
  bool mayLoad(Value memref) const {
    if (isAttribution(memref))
      return true;
    StringRef name = tensorOf(memref);
    return !name.empty() && !anyWrittenBefore && !writtenBefore.contains(name);
  }
  /// Whether a store to `memref` may come before the wait: no earlier
  /// launch reads what it overwrites or writes it after.
  bool mayStore(Value memref) const {
    if (isAttribution(memref))
      return true;
    StringRef name = tensorOf(memref);
    return !name.empty() && !anyWrittenBefore && !anyReadBefore &&
           !writtenBefore.contains(name) && !readBefore.contains(name);
  }
};

/// Whether `kind` is already in the body of `func`.
bool hasControl(gpu::GPUFuncOp func, NVVM::GridDepActionKind kind) {
  bool found = false;
  func.walk([&](NVVM::GriddepcontrolOp ctl) {
    found |= ctl.getKind() == kind;
  });
  return found;
}

/// Whether `op` and every op nested in it touch nothing an earlier launch
/// of the step writes, and write nothing an earlier launch reads or
/// writes: ops without memory effects, barriers, and loads, stores and
/// atomics of buffers that allow it.
bool mayPrecedeWait(Operation &op, const Chaining &c) {
  WalkResult result = op.walk([&](Operation *nested) {
    if (auto load = dyn_cast<memref::LoadOp>(nested))
      return c.mayLoad(load.getMemref()) ? WalkResult::advance()
                                         : WalkResult::interrupt();
    if (auto store = dyn_cast<memref::StoreOp>(nested))
      return c.mayStore(store.getMemref()) ? WalkResult::advance()
                                           : WalkResult::interrupt();
    if (auto rmw = dyn_cast<memref::AtomicRMWOp>(nested))
      return c.mayStore(rmw.getMemref()) ? WalkResult::advance()
                                         : WalkResult::interrupt();
    // A trigger is no access; barriers order this CTA's own accesses.
    if (isa<gpu::BarrierOp, NVVM::GriddepcontrolOp>(nested))
      return WalkResult::advance();
    // Control flow and pure ops: what is nested in them is walked too.
    if (nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        isMemoryEffectFree(nested))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !result.wasInterrupted();
}

/// Puts a wait in `block` before its first op that may not precede one,
/// and returns whether it did. An scf.if is entered instead: each branch
/// waits where it needs to, so a path that touches no earlier launch's
/// data (a row within budget) does its work without waiting, and the ops
/// after the if are judged again. A thread that waits twice finds the
/// second wait already met.
bool placeWaits(Block &block, const Chaining &c, OpBuilder &b) {
  for (Operation &op : block) {
    if (mayPrecedeWait(op, c))
      continue;
    if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
      for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()})
        if (!region->empty())
          placeWaits(region->front(), c, b);
      continue;
    }
    b.setInsertionPoint(&op);
    NVVM::GriddepcontrolOp::create(b, op.getLoc(),
                                   NVVM::GridDepActionKind::wait);
    return true;
  }
  return false;
}

void chain(const Chaining &c) {
  gpu::GPUFuncOp func = c.func;
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  bool waits = hasControl(func, NVVM::GridDepActionKind::wait);
  if (c.trigger &&
      !hasControl(func, NVVM::GridDepActionKind::launch_dependents))
    NVVM::GriddepcontrolOp::create(b, func.getLoc(),
                                   NVVM::GridDepActionKind::launch_dependents);
  // The waits go before the first ops that may touch what an earlier
  // launch wrote (or write what it read): the kernel's own prologue (its
  // row's bounds, offset and copies) then overlaps the launch before it.
  // Every thread still waits before it returns, so the kernel completes
  // only after the launch before it has: the launches after it, and the
  // stream's work after the step, may rely on all earlier launches having
  // completed once this one has.
  if (c.wait && !waits && !placeWaits(entry, c, b)) {
    b.setInsertionPoint(entry.getTerminator());
    NVVM::GriddepcontrolOp::create(b, func.getLoc(),
                                   NVVM::GridDepActionKind::wait);
  }
}

struct VortexGPUChainLaunchesPass final
    : vortex::impl::VortexGPUChainLaunchesBase<VortexGPUChainLaunchesPass> {
  using Base::Base;

  void runOnOperation() override;

  /// The gpu.func kernel `name` of the module, or null.
  gpu::GPUFuncOp findKernel(StringRef name) {
    for (auto gpuModule : getOperation().getOps<gpu::GPUModuleOp>())
      if (auto func = gpuModule.lookupSymbol<gpu::GPUFuncOp>(name))
        return func.isKernel() ? func : nullptr;
    return nullptr;
  }

  /// The launches of one step, with the kernels' needs added to `needs` and
  /// `pdl` set on every launch after the first. A launch of a kernel the
  /// module lacks is left as it is, to the manifest's reader (vortex-compile
  /// names every missing kernel); the launches after it wait before any
  /// load.
  ArrayAttr chainStep(StepAttr step, llvm::StringMap<Chaining> &needs);
};

/// Adds a launch's reads or writes list to `names`; a missing list may name
/// anything.
void addTensors(ArrayAttr list, llvm::StringSet<> &names, bool &any) {
  any |= !list;
  if (list)
    for (auto name : list.getAsRange<StringAttr>())
      names.insert(name.getValue());
}

/// The launch's `choice` ("" if none).
static StringRef choiceOf(LaunchAttr launch) {
  return launch.getChoice() ? launch.getChoice().getValue() : StringRef();
}

ArrayAttr
VortexGPUChainLaunchesPass::chainStep(StepAttr step,
                                      llvm::StringMap<Chaining> &needs) {
  SmallVector<LaunchAttr> list = llvm::to_vector(step.getLaunchList());
  SmallVector<Attribute> out;
  // What the launches so far read and write; a launch without a reads
  // (writes) list may read (write) anything, and then every later kernel
  // waits before any store (any access to a buffer argument).
  llvm::StringSet<> read, written;
  bool anyRead = false, anyWritten = false;
  // Alternatives (adjacent launches of one `choice`) never run together:
  // each is chained to the launches before the group [first, end) only.
  llvm::StringSet<> readBefore, writtenBefore;
  bool anyReadBefore = false, anyWrittenBefore = false;
  size_t first = 0, end = 0;
  for (auto [i, launch] : llvm::enumerate(list)) {
    if (i == end) {
      first = i;
      end = i + 1;
      StringRef choice = choiceOf(launch);
      while (!choice.empty() && end < list.size() &&
             choiceOf(list[end]) == choice)
        ++end;
      readBefore = read;
      writtenBefore = written;
      anyReadBefore = anyRead;
      anyWrittenBefore = anyWritten;
    }
    StringRef name = launch.getKernel().getValue();
    gpu::GPUFuncOp func = findKernel(name);
    if (!func) {
      anyRead = anyWritten = true;
      out.push_back(launch);
      continue;
    }
    Chaining &c = needs[name];
    c.func = func;
    c.wait |= first > 0;
    c.trigger |= end < list.size();
    c.params.clear();
    for (LaunchParamAttr p : launch.getParamList())
      c.params.push_back(p.isBuffer() ? p.getName().str() : std::string());
    for (const auto &r : readBefore)
      c.readBefore.insert(r.getKey());
    for (const auto &w : writtenBefore)
      c.writtenBefore.insert(w.getKey());
    c.anyReadBefore |= anyReadBefore;
    c.anyWrittenBefore |= anyWrittenBefore;
    addTensors(launch.getReads(), read, anyRead);
    addTensors(launch.getWrites(), written, anyWritten);
    out.push_back(first > 0 ? launch.withPdl() : launch);
  }
  return ArrayAttr::get(&getContext(), out);
}

void VortexGPUChainLaunchesPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<unsigned> sm = vortex::parseSMVersion(chip);
  if (!sm) {
    module.emitError("vortex-gpu-chain-launches: chip '")
        << chip << "' is not sm_<number>[suffix]";
    return signalPassFailure();
  }
  Attribute attr = module->getAttr(abi::kManifestAttrName);
  auto manifest = dyn_cast_or_null<vortex::ManifestAttr>(attr);
  if (attr && !manifest) {
    module.emitError("vortex-gpu-chain-launches: ")
        << abi::kManifestAttrName << " is no #vortex.manifest";
    return signalPassFailure();
  }
  // griddepcontrol is sm_90's; hand-written modules have no launch order.
  if (*sm < 90 || !manifest)
    return;
  llvm::StringMap<Chaining> needs;
  NamedAttrList steps;
  for (NamedAttribute step : manifest.getSteps()) {
    auto fields = cast<StepAttr>(step.getValue());
    steps.append(step.getName(),
                 StepAttr::get(&getContext(), fields.getArgs(),
                               fields.getWrites(), chainStep(fields, needs),
                               fields.getDecodeRefusal()));
  }
  // Every step is read before anything changes: a refused module is left
  // as it was.
  for (const auto &entry : needs)
    chain(entry.getValue());
  module->setAttr(abi::kManifestAttrName,
                  manifest.withSteps(steps.getDictionary(&getContext())));
}

} // namespace
