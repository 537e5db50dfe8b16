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

FailureOr<llvm::json::Object> vortex::manifestToJSON(DictionaryAttr manifest,
                                                     Location loc) {
  FailureOr<llvm::json::Value> value = toJSON(manifest, loc, "");
  if (failed(value))
    return failure();
  return std::move(*value->getAsObject());
}

SmallVector<StringRef> vortex::getManifestKernels(DictionaryAttr manifest) {
  SmallVector<StringRef> names;
  auto steps = manifest.getAs<DictionaryAttr>(abi::kManifestSteps);
  if (!steps)
    return names;
  for (NamedAttribute step : steps)
    if (auto stepDict = dyn_cast<DictionaryAttr>(step.getValue()))
      if (auto launches = stepDict.getAs<ArrayAttr>(abi::kManifestKernels))
        for (Attribute launch : launches)
          if (auto dict = dyn_cast<DictionaryAttr>(launch))
            if (auto kernel = dict.getAs<StringAttr>(abi::kManifestKernel))
              names.push_back(kernel.getValue());
  return names;
}

FailureOr<DictionaryAttr> vortex::getManifestAttr(ModuleOp module,
                                                  std::string &flow) {
  Location loc = module.getLoc();
  Attribute attr = module->getAttr(kManifestAttr);
  auto manifest = dyn_cast_or_null<DictionaryAttr>(attr);
  if (attr && !manifest)
    return emitError(loc) << kManifestAttr << " must be a dictionary, got "
                          << attr;
  if (!manifest)
    return manifest;
  // A hand-written module may carry a manifest of another version.
  if (Attribute version = manifest.get("version")) {
    auto v = dyn_cast<IntegerAttr>(version);
    if (!v || v.getInt() != abi::kManifestVersion)
      return emitError(loc) << kManifestAttr << ": version " << version
                            << " is not the version this tool writes ("
                            << abi::kManifestVersion << ")";
  }
  if (auto steps = manifest.getAs<DictionaryAttr>(abi::kManifestSteps)) {
    for (NamedAttribute step : steps) {
      auto dict = dyn_cast<DictionaryAttr>(step.getValue());
      if (!dict || !dict.getAs<ArrayAttr>(abi::kManifestArgs) ||
          !dict.getAs<ArrayAttr>(abi::kManifestWrites) ||
          !dict.getAs<ArrayAttr>(abi::kManifestKernels))
        return emitError(loc) << kManifestAttr << ": step " << step.getName()
                              << " must be {args, writes, kernels}";
    }
  }
  if (Attribute flowAttr = manifest.get("flow")) {
    auto name = dyn_cast<StringAttr>(flowAttr);
    if (!name || name.getValue().empty() ||
        name.getValue().find_first_of("/\\") != StringRef::npos ||
        name.getValue() == "." || name.getValue() == "..")
      return emitError(loc) << kManifestAttr
                            << ": \"flow\" must be a file name, got "
                            << flowAttr;
    flow = name.getValue().str();
  }
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
