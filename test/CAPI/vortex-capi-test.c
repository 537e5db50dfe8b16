/*===- vortex-capi-test.c - Test of the vortex C API ---------------------===*/

// RUN: vortex-capi-test 2>&1 | FileCheck %s

#include "Vortex/CAPI/Vortex.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdio.h>
#include <stdlib.h>

static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

/// Prints diagnostics to stdout, in order with the rest of the output.
static MlirLogicalResult printDiagnostic(MlirDiagnostic diag, void *userData) {
  (void)userData;
  fprintf(stdout, "diagnostic: ");
  mlirDiagnosticPrint(diag, printToStdout, NULL);
  fprintf(stdout, "\n");
  return mlirLogicalResultSuccess();
}

static MlirContext makeContext(void) {
  MlirContext ctx = mlirContextCreate();
  mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  MlirDialectHandle handle = mlirGetDialectHandle__vortex__();
  mlirDialectHandleRegisterDialect(handle, ctx);
  mlirDialectHandleLoadDialect(handle, ctx);
  return ctx;
}

static void testTypes(MlirContext ctx) {
  // CHECK-LABEL: testTypes
  fprintf(stdout, "testTypes\n");
  MlirType bf16 = mlirBF16TypeGet(ctx);
  MlirType t = vortexVTensorTypeGet(ctx, mlirShapedTypeGetDynamicSize(), 5,
                                    128, bf16, VortexFormatBatched);
  // CHECK: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
  mlirTypePrint(t, printToStdout, NULL);
  fprintf(stdout, "\n");
  // CHECK: isa=1 format=0 d0=5 padded_d0=8 padded_d1=128 needs_padding=1
  fprintf(stdout, "isa=%d format=%d d0=%lld padded_d0=%lld padded_d1=%lld "
                  "needs_padding=%d\n",
          vortexTypeIsAVTensor(t), vortexVTensorTypeGetFormat(t),
          (long long)vortexVTensorTypeGetDim(t, 1),
          (long long)vortexVTensorTypeGetPaddedDim(t, 1),
          (long long)vortexVTensorTypeGetPaddedDim(t, 2),
          vortexVTensorTypeNeedsPadding(t));
  // CHECK: elt_is_bf16=1
  fprintf(stdout, "elt_is_bf16=%d\n",
          mlirTypeIsABF16(vortexVTensorTypeGetElementType(t)));
  // CHECK: not_vtensor=0
  fprintf(stdout, "not_vtensor=%d\n", vortexTypeIsAVTensor(bf16));

  MlirAttribute f = vortexFormatAttrGet(ctx, VortexFormatPaged);
  // CHECK: #vortex.format<paged> value=2
  mlirAttributePrint(f, printToStdout, NULL);
  fprintf(stdout, " value=%d\n", vortexFormatAttrGetValue(f));
  // CHECK: bad_format_is_null=1
  fprintf(stdout, "bad_format_is_null=%d\n",
          mlirAttributeIsNull(vortexFormatAttrGet(ctx, 9)));

  // An i64 element type is rejected with a diagnostic and a null type.
  // CHECK: diagnostic: vtensor element type must be bf16, f16, f32, f8E4M3FN, f8E5M2 or i32, got 'i64'
  // CHECK: bad_type_is_null=1
  MlirType bad = vortexVTensorTypeGet(ctx, 4, 1, 1,
                                      mlirIntegerTypeGet(ctx, 64),
                                      VortexFormatRagged);
  fprintf(stdout, "bad_type_is_null=%d\n", mlirTypeIsNull(bad));
}

static void testParse(MlirContext ctx) {
  // CHECK-LABEL: testParse
  fprintf(stdout, "testParse\n");
  // The context holds only the vortex dialect: the enclosing ops are generic.
  const char *src =
      "\"test.func\"() ({\n"
      "^bb0(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>):\n"
      "  %m = vortex.mean %q {dim = 1 : i64} : "
      "!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>> -> "
      "!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>\n"
      "  \"test.return\"(%m) : "
      "(!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>) -> ()\n"
      "}) : () -> ()\n";
  mlirContextSetAllowUnregisteredDialects(ctx, true);
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(src));
  if (mlirModuleIsNull(module)) {
    fprintf(stdout, "parse failed\n");
    exit(1);
  }
  MlirOperation op = mlirModuleGetOperation(module);
  // CHECK: verified=1
  fprintf(stdout, "verified=%d\n", mlirOperationVerify(op));
  // CHECK: vortex.mean %{{.*}} {dim = 1 : i64}
  mlirOperationPrint(op, printToStdout, NULL);
  fprintf(stdout, "\n");
  mlirModuleDestroy(module);
}

static void testRegistry(void) {
  // CHECK-LABEL: testRegistry
  fprintf(stdout, "testRegistry\n");
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  vortexRegisterDialects(registry);
  MlirContext ctx = mlirContextCreate();
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  MlirDialect dialect = mlirContextGetOrLoadDialect(
      ctx, mlirStringRefCreateFromCString("vortex"));
  // CHECK: loaded=1 namespace=vortex
  MlirStringRef ns = mlirDialectGetNamespace(dialect);
  fprintf(stdout, "loaded=%d namespace=%.*s\n", !mlirDialectIsNull(dialect),
          (int)ns.length, ns.data);
  vortexRegisterPasses();
  // CHECK: passes_registered
  fprintf(stdout, "passes_registered\n");
  mlirContextDestroy(ctx);
}

int main(void) {
  MlirContext ctx = makeContext();
  testTypes(ctx);
  testParse(ctx);
  mlirContextDestroy(ctx);
  testRegistry();
  return 0;
}
