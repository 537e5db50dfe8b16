//===- Manifest.cpp - the vortex.manifest attribute as JSON ---------------===//

#include "Vortex/Target/Manifest.h"
#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Target/Support.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::vortex;

static constexpr llvm::StringLiteral kManifestAttr = abi::kManifestAttrName;

/// JSON strings must be UTF-8; MLIR string attributes need not be.
static std::string toUTF8(StringRef s) {
  return llvm::json::isUTF8(s) ? s.str() : llvm::json::fixUTF8(s);
}

template <typename T>
static llvm::json::Value numberArray(ArrayRef<T> values) {
  llvm::json::Array array;
  for (T v : values)
    array.push_back(v);
  return llvm::json::Value(std::move(array));
}

static FailureOr<llvm::json::Value> toJSON(Attribute attr, Location loc,
                                           const std::string &path) {
  auto unsupported = [&]() -> FailureOr<llvm::json::Value> {
    emitError(loc) << kManifestAttr << ": cannot convert " << attr
                   << " at '" << path << "' to JSON";
    return failure();
  };
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute entry : dict) {
      std::string key = toUTF8(entry.getName().getValue());
      FailureOr<llvm::json::Value> value =
          toJSON(entry.getValue(), loc, path + "." + key);
      if (failed(value))
        return failure();
      object[key] = std::move(*value);
    }
    return llvm::json::Value(std::move(object));
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (auto [i, element] : llvm::enumerate(array)) {
      FailureOr<llvm::json::Value> value =
          toJSON(element, loc, path + "[" + std::to_string(i) + "]");
      if (failed(value))
        return failure();
      values.push_back(std::move(*value));
    }
    return llvm::json::Value(std::move(values));
  }
  if (auto str = dyn_cast<StringAttr>(attr))
    return llvm::json::Value(toUTF8(str.getValue()));
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return llvm::json::Value(boolean.getValue());
  if (auto integer = dyn_cast<IntegerAttr>(attr)) {
    if (!isa<IntegerType, IndexType>(integer.getType()))
      return unsupported();
    APInt value = integer.getValue();
    bool isUnsigned = integer.getType().isUnsignedInteger();
    if (isUnsigned ? !value.isIntN(63) : !value.isSignedIntN(64))
      return unsupported();
    return llvm::json::Value(isUnsigned ? int64_t(value.getZExtValue())
                                        : value.getSExtValue());
  }
  if (auto fp = dyn_cast<FloatAttr>(attr))
    return llvm::json::Value(fp.getValueAsDouble());
  if (isa<UnitAttr>(attr))
    return llvm::json::Value(true);
  if (auto dense = dyn_cast<DenseI32ArrayAttr>(attr))
    return numberArray(dense.asArrayRef());
  if (auto dense = dyn_cast<DenseI64ArrayAttr>(attr))
    return numberArray(dense.asArrayRef());
  if (auto dense = dyn_cast<DenseF32ArrayAttr>(attr))
    return numberArray(dense.asArrayRef());
  if (auto dense = dyn_cast<DenseF64ArrayAttr>(attr))
    return numberArray(dense.asArrayRef());
  return unsupported();
}

/// Sets `object[key]` to the JSON of `attr` (nothing when `attr` is null).
static LogicalResult setJSON(llvm::json::Object &object, StringRef key,
                             Attribute attr, Location loc,
                             const std::string &path) {
  if (!attr)
    return success();
  FailureOr<llvm::json::Value> value = toJSON(attr, loc, path + "." + key.str());
  if (failed(value))
    return failure();
  object[key] = std::move(*value);
  return success();
}

static llvm::json::Value paramJSON(LaunchParamAttr param) {
  llvm::json::Object object{
      {abi::kManifestParamName, toUTF8(param.getName().getValue())},
      {abi::kManifestParamKind, param.isBuffer() ? abi::kManifestBufferParam
                                                 : abi::kManifestScalarParam}};
  if (Type dtype = param.getDtype())
    object[abi::kManifestParamDtype] = dtype.isInteger(64) ? "i64" : "i32";
  if (std::optional<int64_t> value = param.getValue())
    object[abi::kManifestParamValue] = *value;
  return llvm::json::Value(std::move(object));
}

static FailureOr<llvm::json::Value>
launchJSON(LaunchAttr launch, Location loc, const std::string &path) {
  llvm::json::Object grid{{"kind", stringifyGridKind(launch.getGrid())}};
  if (launch.getGrid() == GridKind::Persistent)
    grid["ctas_per_sm"] = launch.getCtasPerSm();
  if (launch.getGrid() == GridKind::Items) {
    grid["of"] = toUTF8(launch.getItemsOf().getValue());
    grid["per_cta"] = launch.getPerCta();
  }
  if (launch.getGridZ() > 1)
    grid["z"] = launch.getGridZ();
  llvm::json::Array params;
  for (LaunchParamAttr param : launch.getParamList())
    params.push_back(paramJSON(param));
  llvm::json::Object object{
      {abi::kManifestKernel, toUTF8(launch.getKernel().getValue())},
      {"grid", std::move(grid)},
      {"block", llvm::json::Array{launch.getThreads(), 1, 1}},
      {"shared_bytes", launch.getSharedBytes()},
      {abi::kManifestParams, std::move(params)}};
  if (launch.isChained())
    object[abi::kManifestPdl] = true;
  if (failed(setJSON(object, abi::kManifestReads, launch.getReads(), loc,
                     path)) ||
      failed(setJSON(object, abi::kManifestWrites, launch.getWrites(), loc,
                     path)) ||
      failed(setJSON(object, abi::kManifestChoice, launch.getChoice(), loc,
                     path)))
    return failure();
  return llvm::json::Value(std::move(object));
}

static FailureOr<llvm::json::Value> stepJSON(StepAttr step, Location loc,
                                             const std::string &path) {
  llvm::json::Array launches;
  for (auto [i, launch] : llvm::enumerate(step.getLaunchList())) {
    FailureOr<llvm::json::Value> value =
        launchJSON(launch, loc, path + ".kernels[" + std::to_string(i) + "]");
    if (failed(value))
      return failure();
    launches.push_back(std::move(*value));
  }
  llvm::json::Object object{{abi::kManifestKernels, std::move(launches)}};
  if (failed(setJSON(object, abi::kManifestArgs, step.getArgs(), loc, path)) ||
      failed(
          setJSON(object, abi::kManifestWrites, step.getWrites(), loc, path)) ||
      failed(setJSON(object, abi::kManifestDecodeRefusal,
                     step.getDecodeRefusal(), loc, path)))
    return failure();
  return llvm::json::Value(std::move(object));
}

static FailureOr<llvm::json::Value>
tensorJSON(TensorAttr tensor, Location loc, const std::string &path) {
  llvm::json::Object object{
      {"role", stringifyTensorRole(tensor.getRole())},
      {"dtype", abi::dtypeName(tensor.getDtype())}};
  if (failed(setJSON(object, "shape", tensor.getShape(), loc, path)) ||
      failed(setJSON(object, "flags", tensor.getFlags(), loc, path)))
    return failure();
  return llvm::json::Value(std::move(object));
}

FailureOr<llvm::json::Object> vortex::manifestToJSON(ManifestAttr manifest,
                                                     Location loc) {
  llvm::json::Object json{
      {"version", manifest.getVersion()},
      {"flow", toUTF8(manifest.getFlow().getValue())},
      {"backend", toUTF8(manifest.getBackend().getValue())}};
  if (failed(setJSON(json, "source_hash", manifest.getSourceHash(), loc, "")) ||
      failed(setJSON(json, "config", manifest.getConfig(), loc, "")) ||
      failed(setJSON(json, "symbols", manifest.getSymbols(), loc, "")))
    return failure();
  if (DictionaryAttr tensors = manifest.getTensors()) {
    llvm::json::Object object;
    for (NamedAttribute entry : tensors) {
      std::string key = toUTF8(entry.getName().getValue());
      FailureOr<llvm::json::Value> value = tensorJSON(
          cast<TensorAttr>(entry.getValue()), loc, ".tensors." + key);
      if (failed(value))
        return failure();
      object[key] = std::move(*value);
    }
    json["tensors"] = std::move(object);
  }
  llvm::json::Object steps;
  for (NamedAttribute entry : manifest.getSteps()) {
    std::string key = toUTF8(entry.getName().getValue());
    FailureOr<llvm::json::Value> value =
        stepJSON(cast<StepAttr>(entry.getValue()), loc, ".steps." + key);
    if (failed(value))
      return failure();
    steps[key] = std::move(*value);
  }
  json[abi::kManifestSteps] = std::move(steps);
  return json;
}

SmallVector<StringRef> vortex::getManifestKernels(ManifestAttr manifest) {
  SmallVector<StringRef> names;
  for (NamedAttribute step : manifest.getSteps())
    for (LaunchAttr launch : cast<StepAttr>(step.getValue()).getLaunchList())
      names.push_back(launch.getKernel().getValue());
  return names;
}

FailureOr<ManifestAttr> vortex::getManifestAttr(ModuleOp module,
                                                std::string &flow) {
  Location loc = module.getLoc();
  Attribute attr = module->getAttr(kManifestAttr);
  auto manifest = dyn_cast_or_null<ManifestAttr>(attr);
  if (attr && !manifest)
    return emitError(loc) << kManifestAttr << " must be a #vortex.manifest, got "
                          << attr;
  if (!manifest)
    return manifest;
  StringRef name = manifest.getFlow().getValue();
  if (name.find_first_of("/\\") != StringRef::npos || name == "." ||
      name == "..")
    return emitError(loc) << kManifestAttr
                          << ": \"flow\" must be a file name, got \""
                          << name << "\"";
  flow = name.str();
  return manifest;
}

LogicalResult vortex::writeManifestJSON(StringRef path,
                                        llvm::json::Object json,
                                        StringRef flow, StringRef target,
                                        llvm::json::Object artifacts,
                                        Location loc) {
  json["version"] = abi::kManifestVersion;
  json["flow"] = flow.str();
  json["target"] = target.str();
  json["artifacts"] = std::move(artifacts);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(json))) << "\n";
  return writeArtifact(path, text, loc);
}
