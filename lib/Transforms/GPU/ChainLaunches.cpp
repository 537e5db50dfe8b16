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

#include "mlir/Dialect/MemRef/IR/MemRef.h"
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

namespace {

/// A launched kernel, and what it must do at its entry.
struct Chaining {
  gpu::GPUFuncOp func;
  bool wait = false, trigger = false;
  /// The kernel's parameter names (a buffer's tensor, or "" for a scalar),
  /// one per argument, and the tensors earlier launches of its step write:
  /// loads of other buffers may come before the wait.
  SmallVector<std::string> params;
  llvm::StringSet<> writtenBefore;
  /// An earlier launch lists no writes: it may write anything.
  bool anyWrittenBefore = false;
};

/// Whether the entry block of `func` already holds griddepcontrol `kind`.
bool hasControl(gpu::GPUFuncOp func, NVVM::GridDepActionKind kind) {
  return llvm::any_of(func.getBody().front(), [&](Operation &op) {
    auto ctl = dyn_cast<NVVM::GriddepcontrolOp>(op);
    return ctl && ctl.getKind() == kind;
  });
}

/// Whether `op`, ahead of the wait, touches nothing an earlier launch of
/// the step writes: no memory effects and no regions, or a load of a
/// buffer argument no earlier launch writes.
bool mayPrecedeWait(Operation &op, const Chaining &c) {
  gpu::GPUFuncOp func = c.func;
  if (op.getNumRegions() == 0 && isMemoryEffectFree(&op))
    return true;
  auto load = dyn_cast<memref::LoadOp>(op);
  auto arg = load ? dyn_cast<BlockArgument>(load.getMemref()) : nullptr;
  if (!arg || arg.getOwner() != &func.getBody().front() ||
      arg.getArgNumber() >= func.getNumArguments() ||
      func.getNumArguments() != c.params.size())
    return false;
  const std::string &name = c.params[arg.getArgNumber()];
  return !name.empty() && !c.anyWrittenBefore &&
         !c.writtenBefore.contains(name);
}

void chain(const Chaining &c) {
  gpu::GPUFuncOp func = c.func;
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Location loc = func.getLoc();
  bool waits = hasControl(func, NVVM::GridDepActionKind::wait);
  if (c.trigger &&
      !hasControl(func, NVVM::GridDepActionKind::launch_dependents))
    NVVM::GriddepcontrolOp::create(b, loc,
                                   NVVM::GridDepActionKind::launch_dependents);
  if (!c.wait || waits)
    return;
  // The wait goes before the first op that may touch what an earlier launch
  // writes: the kernel's own prologue (its row's bounds) then overlaps the
  // launch before it.
  Operation *at = b.getInsertionBlock()->end() == b.getInsertionPoint()
                      ? nullptr
                      : &*b.getInsertionPoint();
  while (at && mayPrecedeWait(*at, c))
    at = at->getNextNode();
  if (at)
    b.setInsertionPoint(at);
  else
    b.setInsertionPoint(entry.getTerminator());
  NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
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
  /// `pdl` set on every launch after the first; null after a diagnostic. A
  /// launch of a kernel the module lacks is left as it is, to the
  /// manifest's reader (vortex-compile names every missing kernel); the
  /// launches after it wait before any load.
  ArrayAttr chainStep(StringRef step, Attribute launches,
                      llvm::StringMap<Chaining> &needs);
};

ArrayAttr VortexGPUChainLaunchesPass::chainStep(
    StringRef step, Attribute launches, llvm::StringMap<Chaining> &needs) {
  ModuleOp module = getOperation();
  auto list = dyn_cast_or_null<ArrayAttr>(launches);
  if (!list) {
    module.emitError("vortex-gpu-chain-launches: step '")
        << step << "' of the manifest has no kernels array";
    return nullptr;
  }
  SmallVector<Attribute> out;
  Builder b(module.getContext());
  // What the launches so far write; a launch without a writes list may
  // write anything, and then every later kernel waits first.
  llvm::StringSet<> written;
  bool anyWritten = false;
  for (auto [i, launch] : llvm::enumerate(list)) {
    auto dict = dyn_cast<DictionaryAttr>(launch);
    auto name = dict ? dict.getAs<StringAttr>(abi::kManifestKernel) : nullptr;
    if (!name) {
      module.emitError("vortex-gpu-chain-launches: launch ")
          << i << " of step '" << step << "' names no kernel";
      return nullptr;
    }
    gpu::GPUFuncOp func = findKernel(name.getValue());
    if (!func) {
      anyWritten = true;
      out.push_back(dict);
      continue;
    }
    Chaining &c = needs[name.getValue()];
    c.func = func;
    c.wait |= i > 0;
    c.trigger |= i + 1 < list.size();
    c.params.clear();
    if (auto params = dict.getAs<ArrayAttr>(abi::kManifestParams)) {
      for (Attribute p : params) {
        auto pd = dyn_cast<DictionaryAttr>(p);
        auto pname =
            pd ? pd.getAs<StringAttr>(abi::kManifestParamName) : nullptr;
        auto kind =
            pd ? pd.getAs<StringAttr>(abi::kManifestParamKind) : nullptr;
        c.params.push_back(
            pname && kind && kind.getValue() == abi::kManifestBufferParam
                ? pname.getValue().str()
                : std::string());
      }
    }
    for (const auto &w : written)
      c.writtenBefore.insert(w.getKey());
    c.anyWrittenBefore |= anyWritten;
    auto writes = dict.getAs<ArrayAttr>(abi::kManifestWrites);
    anyWritten |= !writes;
    if (writes)
      for (Attribute w : writes) {
        auto ws = dyn_cast<StringAttr>(w);
        anyWritten |= !ws;
        if (ws)
          written.insert(ws.getValue());
      }
    NamedAttrList fields(dict);
    if (i > 0)
      fields.set(abi::kManifestPdl, b.getBoolAttr(true));
    out.push_back(fields.getDictionary(module.getContext()));
  }
  return b.getArrayAttr(out);
}

void VortexGPUChainLaunchesPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<unsigned> sm = vortex::parseSMVersion(chip);
  if (!sm) {
    module.emitError("vortex-gpu-chain-launches: chip '")
        << chip << "' is not sm_<number>[suffix]";
    return signalPassFailure();
  }
  auto manifest = module->getAttrOfType<DictionaryAttr>(abi::kManifestAttrName);
  // griddepcontrol is sm_90's; hand-written modules have no launch order.
  if (*sm < 90 || !manifest)
    return;
  // A hand-written manifest without steps launches nothing to chain (its
  // reader, e.g. vortex-compile, judges the rest).
  Attribute stepsAttr = manifest.get(abi::kManifestSteps);
  if (!stepsAttr)
    return;
  auto steps = dyn_cast<DictionaryAttr>(stepsAttr);
  if (!steps) {
    module.emitError("vortex-gpu-chain-launches: the steps of ")
        << abi::kManifestAttrName << " are not a dictionary";
    return signalPassFailure();
  }

  llvm::StringMap<Chaining> needs;
  NamedAttrList newSteps;
  for (NamedAttribute step : steps) {
    auto fields = dyn_cast<DictionaryAttr>(step.getValue());
    if (!fields) {
      module.emitError("vortex-gpu-chain-launches: step '")
          << step.getName().getValue()
          << "' of the manifest is not a dictionary";
      return signalPassFailure();
    }
    ArrayAttr launches = chainStep(
        step.getName().getValue(), fields.get(abi::kManifestKernels), needs);
    if (!launches)
      return signalPassFailure();
    NamedAttrList stepFields(fields);
    stepFields.set(abi::kManifestKernels, launches);
    newSteps.append(step.getName(),
                    stepFields.getDictionary(module.getContext()));
  }

  // Every step is read before anything changes: a refused module is left
  // as it was.
  for (const auto &entry : needs)
    chain(entry.getValue());
  NamedAttrList newManifest(manifest);
  newManifest.set(abi::kManifestSteps,
                  newSteps.getDictionary(module.getContext()));
  module->setAttr(abi::kManifestAttrName,
                  newManifest.getDictionary(module.getContext()));
}

} // namespace
