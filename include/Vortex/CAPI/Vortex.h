/*===- Vortex.h - C API of the vortex dialect ----------------------*- C -*-===*\
|*                                                                            *|
|* Registration, the !vortex.vtensor type and the #vortex.format attribute,   *|
|* and the compile of a flow into its artifacts (vortexCompileFlow), for      *|
|* language bindings (ctypes, Rust, ...). The library libVortexCAPI also      *|
|* carries MLIR's core IR C API (context, parsing, verifying, printing), its  *|
|* pass manager C API (mlir-c/Pass.h) and mlir-c/RegisterEverything.h.        *|
\*===----------------------------------------------------------------------===*/

#ifndef VORTEX_CAPI_VORTEX_H
#define VORTEX_CAPI_VORTEX_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Vortex, vortex);

/// Formats (values of vortex_torch's FORMAT enum).
enum VortexFormat {
  VortexFormatBatched = 0,
  VortexFormatRagged = 1,
  VortexFormatPaged = 2,
  VortexFormatParameter = 3,
  VortexFormatSlotted = 4,
};

/// Inserts the vortex dialect into a registry. Enough to parse, verify and
/// run convert-vortex-to-linalg; the vortex-to-cpu pipeline bufferizes
/// upstream ops and needs mlirRegisterAllDialects(registry) too.
MLIR_CAPI_EXPORTED void vortexRegisterDialects(MlirDialectRegistry registry);

/// Registers the vortex passes and pipelines globally, for
/// mlirParsePassPipeline and mlirOpPassManagerAddPipeline.
MLIR_CAPI_EXPORTED void vortexRegisterPasses(void);

/// #vortex.format<...>; a null attribute for an out-of-range value.
MLIR_CAPI_EXPORTED MlirAttribute vortexFormatAttrGet(MlirContext ctx,
                                                     int32_t format);
MLIR_CAPI_EXPORTED bool vortexAttributeIsAFormat(MlirAttribute attr);
MLIR_CAPI_EXPORTED int32_t vortexFormatAttrGetValue(MlirAttribute attr);

/// !vortex.vtensor<L x D0 x D1 x elementType, format>; `leading` may be
/// mlirShapedTypeGetDynamicSize(). Returns a null type (and emits a
/// diagnostic) when the parameters are invalid.
MLIR_CAPI_EXPORTED MlirType vortexVTensorTypeGet(MlirContext ctx,
                                                 int64_t leading, int64_t d0,
                                                 int64_t d1,
                                                 MlirType elementType,
                                                 int32_t format);
MLIR_CAPI_EXPORTED bool vortexTypeIsAVTensor(MlirType type);
/// Extent of axis `dim` (0, 1 or 2).
MLIR_CAPI_EXPORTED int64_t vortexVTensorTypeGetDim(MlirType type,
                                                   intptr_t dim);
/// Padded extent of axis `dim` (inner axes rounded up to a power of two).
MLIR_CAPI_EXPORTED int64_t vortexVTensorTypeGetPaddedDim(MlirType type,
                                                         intptr_t dim);
MLIR_CAPI_EXPORTED MlirType vortexVTensorTypeGetElementType(MlirType type);
MLIR_CAPI_EXPORTED int32_t vortexVTensorTypeGetFormat(MlirType type);
MLIR_CAPI_EXPORTED bool vortexVTensorTypeNeedsPadding(MlirType type);

/// Compiles the vortex flow in the file `input` ("-": stdin) into the
/// directory `outputDir`, as `vortex-compile <input> -o <outputDir>` does
/// (the manifest, and PTX and cubins or lib<flow>.so: docs/manifest.md).
/// `options` holds vortex-compile's flags as space-separated `name=value`
/// words without their dashes, e.g. "target=cpu", "target=sm_90 no-cubin
/// to-gpu={topk-threads=256}"; empty: the tool's defaults. The diagnostics,
/// if any, are passed to `diagnostics` as one text, as the tool prints them
/// ("file:line:col: error: ..." or "vortex-compile: error: ..."); it may be
/// NULL. Fails on bad options or input, writing nothing then, and on a
/// failed compile, writing no manifest.
MLIR_CAPI_EXPORTED MlirLogicalResult
vortexCompileFlow(MlirStringRef input, MlirStringRef outputDir,
                  MlirStringRef options, MlirStringCallback diagnostics,
                  void *userData);

#ifdef __cplusplus
}
#endif

#endif /* VORTEX_CAPI_VORTEX_H */
