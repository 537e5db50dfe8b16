//===- Vortex.cpp - C API of the vortex dialect ---------------------------===//

#include "Vortex/CAPI/Vortex.h"
#include "Vortex/Dialect/VortexDialect.h"
#include "Vortex/Driver/Driver.h"
#include "Vortex/Registration.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::vortex;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Vortex, vortex, VortexDialect)

void vortexRegisterDialects(MlirDialectRegistry registry) {
  registerAllVortexDialects(*unwrap(registry));
}

void vortexRegisterPasses(void) { registerAllVortexPasses(); }

MlirAttribute vortexFormatAttrGet(MlirContext ctx, int32_t format) {
  std::optional<Format> f = symbolizeFormat(static_cast<uint32_t>(format));
  if (!f)
    return MlirAttribute{nullptr};
  return wrap(FormatAttr::get(unwrap(ctx), *f));
}

bool vortexAttributeIsAFormat(MlirAttribute attr) {
  return isa<FormatAttr>(unwrap(attr));
}

int32_t vortexFormatAttrGetValue(MlirAttribute attr) {
  return static_cast<int32_t>(cast<FormatAttr>(unwrap(attr)).getValue());
}

MlirType vortexVTensorTypeGet(MlirContext ctx, int64_t leading, int64_t d0,
                              int64_t d1, MlirType elementType,
                              int32_t format) {
  MLIRContext *context = unwrap(ctx);
  std::optional<Format> f = symbolizeFormat(static_cast<uint32_t>(format));
  if (!f) {
    emitError(UnknownLoc::get(context)) << "invalid vortex format " << format;
    return MlirType{nullptr};
  }
  int64_t shape[] = {leading, d0, d1};
  return wrap(VTensorType::getChecked(
      [&] { return emitError(UnknownLoc::get(context)); }, context, llvm::ArrayRef<int64_t>(shape),
      unwrap(elementType), FormatAttr::get(context, *f), false));
}

bool vortexTypeIsAVTensor(MlirType type) {
  return isa<VTensorType>(unwrap(type));
}

int64_t vortexVTensorTypeGetDim(MlirType type, intptr_t dim) {
  return cast<VTensorType>(unwrap(type)).getShape()[dim];
}

int64_t vortexVTensorTypeGetPaddedDim(MlirType type, intptr_t dim) {
  return cast<VTensorType>(unwrap(type)).getPaddedShape()[dim];
}

MlirType vortexVTensorTypeGetElementType(MlirType type) {
  return wrap(cast<VTensorType>(unwrap(type)).getElementType());
}

int32_t vortexVTensorTypeGetFormat(MlirType type) {
  return static_cast<int32_t>(cast<VTensorType>(unwrap(type)).getFormatKind());
}

bool vortexVTensorTypeNeedsPadding(MlirType type) {
  return cast<VTensorType>(unwrap(type)).needsPadding();
}

MlirLogicalResult vortexCompileFlow(MlirStringRef input,
                                    MlirStringRef outputDir,
                                    MlirStringRef options,
                                    MlirStringCallback diagnostics,
                                    void *userData) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto report = [&](LogicalResult result) {
    if (diagnostics && !text.empty())
      diagnostics(mlirStringRefCreate(text.data(), text.size()), userData);
    return wrap(result);
  };
  CompileOptions compileOptions;
  std::string error;
  if (failed(parseCompileOptions(unwrap(options), compileOptions, error))) {
    llvm::WithColor::error(os, "vortex-compile") << "options: " << error
                                                 << "\n";
    return report(failure());
  }
  compileOptions.outputDir = unwrap(outputDir).str();
  if (compileOptions.outputDir.empty()) {
    llvm::WithColor::error(os, "vortex-compile")
        << "no output directory\n";
    return report(failure());
  }
  DialectRegistry registry;
  registerCompileDialects(registry);
  MLIRContext context(registry);
  return report(compileFile(context, unwrap(input), compileOptions, os));
}
