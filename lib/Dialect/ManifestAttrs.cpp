//===- ManifestAttrs.cpp - The typed manifest of a lowered flow -----------===//
//
// The rules a manifest obeys whoever wrote it (a back end, or a test by
// hand): what the JSON writer and vortex-gpu-chain-launches then rely on
// without checking again.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Dialect/VortexDialect.h"

using namespace mlir;
using namespace mlir::vortex;

using EmitFn = function_ref<InFlightDiagnostic()>;

/// Whether every element of `array` is a `T`; else says what `what` holds.
template <typename T>
static LogicalResult allOf(EmitFn emitError, ArrayAttr array, StringRef what,
                           StringRef expected) {
  if (!array)
    return success();
  for (auto [i, element] : llvm::enumerate(array))
    if (!isa<T>(element))
      return emitError() << what << "[" << i << "] must be " << expected
                         << ", got " << element;
  return success();
}

LogicalResult LaunchParamAttr::verify(EmitFn emitError, StringAttr name,
                                      ParamKind kind, Type dtype,
                                      std::optional<int64_t> value) {
  if (!name || name.getValue().empty())
    return emitError() << "a launch parameter needs a name";
  if (kind == ParamKind::Buffer && (dtype || value))
    return emitError() << "buffer parameter '" << name.getValue()
                       << "' takes no dtype or value: the tensor has one";
  if (dtype && !dtype.isInteger(32) && !dtype.isInteger(64))
    return emitError() << "scalar parameter '" << name.getValue()
                       << "' must be i32 or i64, got " << dtype;
  return success();
}

LogicalResult LaunchAttr::verify(EmitFn emitError, StringAttr kernel,
                                 GridKind grid, int64_t ctasPerSM,
                                 StringAttr itemsOf, int64_t perCTA,
                                 int64_t threads, int64_t sharedBytes,
                                 ArrayAttr params, ArrayAttr reads,
                                 ArrayAttr writes, BoolAttr pdl,
                                 StringAttr choice, int64_t gridZ) {
  if (!kernel || kernel.getValue().empty())
    return emitError() << "a launch needs a kernel name";
  if (threads < 1 || sharedBytes < 0)
    return emitError() << "launch of '" << kernel.getValue()
                       << "': threads must be >= 1 and shared_bytes >= 0";
  if ((grid == GridKind::Persistent) != (ctasPerSM > 0))
    return emitError() << "launch of '" << kernel.getValue()
                       << "': ctas_per_sm >= 1 goes with (and only with) a "
                          "persistent grid";
  bool items = grid == GridKind::Items;
  if (items != (itemsOf && !itemsOf.getValue().empty()) ||
      items != (perCTA > 0))
    return emitError() << "launch of '" << kernel.getValue()
                       << "': items_of and per_cta >= 1 go with (and only "
                          "with) an items grid";
  if (failed(allOf<LaunchParamAttr>(emitError, params, "params",
                                    "a #vortex.launch_param")) ||
      failed(allOf<StringAttr>(emitError, reads, "reads", "a tensor name")) ||
      failed(allOf<StringAttr>(emitError, writes, "writes", "a tensor name")))
    return failure();
  if (choice && choice.getValue().empty())
    return emitError() << "launch of '" << kernel.getValue()
                       << "': an empty choice";
  if (gridZ < 1 || gridZ > 65535)
    return emitError() << "launch of '" << kernel.getValue()
                       << "': grid_z must be in [1, 65535], got " << gridZ;
  return success();
}

LaunchAttr LaunchAttr::withPdl() const {
  return LaunchAttr::get(getContext(), getKernel(), getGrid(), getCtasPerSm(),
                         getItemsOf(), getPerCta(), getThreads(),
                         getSharedBytes(), getParams(), getReads(),
                         getWrites(), BoolAttr::get(getContext(), true),
                         getChoice(), getGridZ());
}

LogicalResult StepAttr::verify(EmitFn emitError, ArrayAttr args,
                               ArrayAttr writes, ArrayAttr launches,
                               StringAttr decodeRefusal) {
  return success(
      succeeded(allOf<StringAttr>(emitError, args, "args", "a tensor name")) &&
      succeeded(
          allOf<StringAttr>(emitError, writes, "writes", "a tensor name")) &&
      succeeded(allOf<LaunchAttr>(emitError, launches, "launches",
                                  "a #vortex.launch")));
}

LogicalResult TensorAttr::verify(EmitFn emitError, TensorRole role,
                                 Type dtype, ArrayAttr shape,
                                 DictionaryAttr flags) {
  for (auto [i, extent] : llvm::enumerate(shape)) {
    auto size = dyn_cast<IntegerAttr>(extent);
    auto symbol = dyn_cast<StringAttr>(extent);
    if ((!size || size.getInt() < 0) &&
        (!symbol || symbol.getValue().empty()))
      return emitError() << "shape[" << i
                         << "] must be a size >= 0 or a symbol, got "
                         << extent;
  }
  if (flags && role != TensorRole::Status)
    return emitError() << "only the status tensor lists flags";
  if (flags)
    for (NamedAttribute flag : flags)
      if (!isa<IntegerAttr>(flag.getValue()))
        return emitError() << "flag '" << flag.getName().getValue()
                           << "' must be an integer";
  return success();
}

LogicalResult ManifestAttr::verify(EmitFn emitError, int64_t version,
                                   StringAttr flow, StringAttr backend,
                                   StringAttr sourceHash,
                                   DictionaryAttr config,
                                   DictionaryAttr symbols,
                                   DictionaryAttr tensors,
                                   DictionaryAttr steps) {
  // A hand-written module may carry a manifest of another version.
  if (version != abi::kManifestVersion)
    return emitError() << "manifest version " << version
                       << " is not the version this build writes ("
                       << abi::kManifestVersion << ")";
  if (!flow || flow.getValue().empty())
    return emitError() << "a manifest needs the flow's name";
  if (!backend || (backend.getValue() != "cpu" && backend.getValue() != "cuda"))
    return emitError() << "backend must be \"cpu\" or \"cuda\", got "
                       << backend;
  if (symbols)
    for (NamedAttribute symbol : symbols)
      if (!isa<StringAttr>(symbol.getValue()))
        return emitError() << "symbol '" << symbol.getName().getValue()
                           << "' must name the tensor that binds it";
  if (tensors)
    for (NamedAttribute tensor : tensors)
      if (!isa<TensorAttr>(tensor.getValue()))
        return emitError() << "tensor '" << tensor.getName().getValue()
                           << "' must be a #vortex.tensor";
  for (NamedAttribute step : steps) {
    if (!symbolizeStep(step.getName().getValue()))
      return emitError() << "unknown step '" << step.getName().getValue()
                         << "' (indexer, cache or attend)";
    if (!isa<StepAttr>(step.getValue()))
      return emitError() << "step '" << step.getName().getValue()
                         << "' must be a #vortex.step";
  }
  return success();
}

ManifestAttr ManifestAttr::withSteps(DictionaryAttr steps) const {
  return ManifestAttr::get(getContext(), getVersion(), getFlow(),
                           getBackend(), getSourceHash(), getConfig(),
                           getSymbols(), getTensors(), steps);
}
