/*===- vortex-capi-embedder.c - The installed C API, from C ---------------===*/
/* Links Vortex::VortexCAPI only: builds and prints a !vortex.vtensor type.  */

#include "Vortex/CAPI/Vortex.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/IR.h"

#include <stdio.h>

static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

int main(void) {
  MlirContext ctx = mlirContextCreate();
  MlirDialectHandle vortex = mlirGetDialectHandle__vortex__();
  mlirDialectHandleRegisterDialect(vortex, ctx);
  mlirDialectHandleLoadDialect(vortex, ctx);
  MlirType t = vortexVTensorTypeGet(ctx, mlirShapedTypeGetDynamicSize(), 16,
                                    128, mlirBF16TypeGet(ctx),
                                    VortexFormatPaged);
  fprintf(stdout, "capi type: ");
  mlirTypePrint(t, printToStdout, NULL);
  fprintf(stdout, "\n");
  mlirContextDestroy(ctx);
  return mlirTypeIsNull(t);
}
