/*===- vortex-capi-embedder.c - The installed C API, from C ---------------===*/
/* Links Vortex::VortexCAPI only: builds and prints a !vortex.vtensor type,  */
/* then parses, verifies and lowers a vortex.flow.                           */

#include "Vortex/CAPI/Vortex.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>

static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

static const char *kFlow =
    "!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>\n"
    "!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>\n"
    "!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>\n"
    "!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>\n"
    "!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>\n"
    "!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>\n"
    "!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>\n"
    "vortex.flow @block_sparse_attention\n"
    "    config = #vortex.config<block_size = 16, page_size = 16,\n"
    "        head_dim = 128, group_size = 8, topk_val = 29,\n"
    "        topk_ratio = 6.250000e-02 : f64, reserved_bos = 1,\n"
    "        reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>\n"
    "    fields(centroids = [1, 128])\n"
    "cache(%k: !kv, %v: !kv, %centroids: !c) {\n"
    "  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr\n"
    "  vortex.write %c into %centroids : !cr into !c\n"
    "}\n"
    "indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {\n"
    "  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm\n"
    "  %score = vortex.gemm %q_mean, %centroids : (!qm, !c) -> !s\n"
    "  vortex.topk %score into %o : !s into !o\n"
    "}\n";

/// Parses, verifies and lowers kFlow to linalg; nonzero on failure.
static int lowerFlow(MlirContext ctx) {
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kFlow));
  if (mlirModuleIsNull(module)) {
    fprintf(stdout, "capi flow parsed: 0\n");
    return 1;
  }
  MlirOperation op = mlirModuleGetOperation(module);
  vortexRegisterPasses();
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirLogicalResult result = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString(
          "builtin.module(vortex-fuse,vortex-pad,vortex-mask-padding,"
          "convert-vortex-to-linalg)"),
      printToStdout, NULL);
  if (mlirLogicalResultIsSuccess(result))
    result = mlirPassManagerRunOnOp(pm, op);
  mlirPassManagerDestroy(pm);
  int failed = !mlirOperationVerify(op) || mlirLogicalResultIsFailure(result);
  if (!failed) {
    MlirSymbolTable symbols = mlirSymbolTableCreate(op);
    failed = mlirSymbolTableIsNull(symbols) ||
             mlirOperationIsNull(mlirSymbolTableLookup(
                 symbols, mlirStringRefCreateFromCString(
                              "block_sparse_attention_indexer")));
    if (!mlirSymbolTableIsNull(symbols))
      mlirSymbolTableDestroy(symbols);
  }
  fprintf(stdout, "capi flow lowered: %d\n", !failed);
  mlirModuleDestroy(module);
  return failed;
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
  int failed = mlirTypeIsNull(t) || lowerFlow(ctx);
  mlirContextDestroy(ctx);
  return failed;
}
