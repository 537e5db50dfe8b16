/*===- vortex-capi-test.c - Test of the vortex C API ---------------------===*/

// RUN: rm -rf %t && mkdir -p %t && vortex-capi-test %t 2>&1 | FileCheck %s
// The same program in a process that loaded libMLIR.so before
// libVortexCAPI.so, as an embedder that brought MLIR in through another
// library does: it works alike, since vortex is built with libMLIR.so's
// compiler (CMakeLists.txt).
// RUN: rm -rf %t.first && mkdir -p %t.first
// RUN: vortex-capi-test-mlir-first %t.first 2>&1 \
// RUN:   | FileCheck %s --check-prefixes=CHECK,MLIRFIRST
// MLIRFIRST: libMLIR.so loaded before libVortexCAPI.so

#ifdef VORTEX_CAPI_TEST_MLIR_FIRST
#define _GNU_SOURCE
#include <link.h>
#endif

#include "Vortex/CAPI/Vortex.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/// block_sparse_attention (examples/block_sparse_attention.mlir).
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
    "  TOPK\n"
    "}\n";

/// kFlow with TOPK replaced by `topk` (the empty string drops the selection).
static MlirModule parseFlow(MlirContext ctx, const char *topk) {
  static char buf[4096];
  const char *at = strstr(kFlow, "TOPK");
  snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - kFlow), kFlow, topk,
           at + strlen("TOPK"));
  return mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(buf));
}

static const char *kTopk = "vortex.topk %score into %o : !s into !o";

/// Runs `pipeline` (textual, anchored on builtin.module) on a fresh parse of
/// the flow and prints the result.
static void lower(MlirContext ctx, const char *pipeline) {
  MlirModule module = parseFlow(ctx, kTopk);
  if (mlirModuleIsNull(module)) {
    fprintf(stdout, "parse failed\n");
    exit(1);
  }
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString(pipeline), printToStdout, NULL);
  if (mlirLogicalResultIsFailure(parsed)) {
    fprintf(stdout, "\npipeline parse failed\n");
    exit(1);
  }
  MlirOperation op = mlirModuleGetOperation(module);
  MlirLogicalResult ran = mlirPassManagerRunOnOp(pm, op);
  fprintf(stdout, "lowered=%d\n", mlirLogicalResultIsSuccess(ran));
  mlirOperationPrint(op, printToStdout, NULL);
  fprintf(stdout, "\n");
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
}

/// Parses, verifies and lowers a vortex.flow with nothing but the C API.
static void testFlow(void) {
  // CHECK-LABEL: testFlow
  fprintf(stdout, "testFlow\n");
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  vortexRegisterDialects(registry);
  MlirContext ctx = mlirContextCreate();
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  vortexRegisterPasses();

  // A flow in a builtin.module: vortex.flow is a symbol, and its verifier
  // checks that the module is a symbol table (a trait TypeID shared with
  // libMLIR.so).
  // CHECK-NOT: diagnostic
  // CHECK: parsed=1 verified=1
  MlirModule module = parseFlow(ctx, kTopk);
  if (mlirModuleIsNull(module)) {
    fprintf(stdout, "parse failed\n");
    exit(1);
  }
  MlirOperation moduleOp = mlirModuleGetOperation(module);
  fprintf(stdout, "parsed=1 verified=%d\n", mlirOperationVerify(moduleOp));

  // MLIR's own C API code sees the same trait.
  // CHECK: lookup: vortex.flow
  MlirSymbolTable symbols = mlirSymbolTableCreate(moduleOp);
  if (mlirSymbolTableIsNull(symbols)) {
    fprintf(stdout, "builtin.module is not a symbol table\n");
    exit(1);
  }
  MlirOperation flow = mlirSymbolTableLookup(
      symbols, mlirStringRefCreateFromCString("block_sparse_attention"));
  MlirStringRef flowName = mlirIdentifierStr(mlirOperationGetName(flow));
  fprintf(stdout, "lookup: %.*s\n", (int)flowName.length, flowName.data);
  mlirSymbolTableDestroy(symbols);

  // Without its topk the indexer no longer verifies.
  // CHECK: diagnostic: 'vortex.flow' op indexer must end in exactly one vortex.topk, vortex.approx_topk or vortex.union
  // CHECK-NEXT: verified_without_topk=0
  MlirBlock indexer =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(flow, 1));
  MlirOperation last = mlirBlockGetFirstOperation(indexer);
  while (!mlirOperationIsNull(mlirOperationGetNextInBlock(last)))
    last = mlirOperationGetNextInBlock(last);
  mlirOperationDestroy(last);
  fprintf(stdout, "verified_without_topk=%d\n",
          mlirOperationVerify(moduleOp));
  mlirModuleDestroy(module);

  // The parser verifies too: the same flow as text is rejected.
  // CHECK: diagnostic: 'vortex.flow' op indexer must end in exactly one vortex.topk, vortex.approx_topk or vortex.union
  // CHECK-NEXT: parsed_without_topk=0
  module = parseFlow(ctx, "");
  fprintf(stdout, "parsed_without_topk=%d\n", !mlirModuleIsNull(module));

  // A bad pass name is reported through the callback.
  // CHECK: 'vortex-no-such-pass' does not refer to a registered pass or pass pipeline
  // CHECK: bad_pipeline=1
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirLogicalResult bad = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString("builtin.module(vortex-no-such-pass)"),
      printToStdout, NULL);
  fprintf(stdout, "\nbad_pipeline=%d\n", mlirLogicalResultIsFailure(bad));
  mlirPassManagerDestroy(pm);

  // The vortex passes by name, through convert-vortex-to-linalg: one function
  // per step, no flow left.
  // CHECK: lowered=1
  // CHECK-NOT: vortex.flow
  // CHECK-DAG: func.func @block_sparse_attention_indexer(
  // CHECK-DAG: func.func @block_sparse_attention_cache(
  // CHECK-DAG: linalg.
  // CHECK-NOT: vortex.flow
  // CHECK: lowered_to_linalg
  lower(ctx, "builtin.module(vortex-fuse,vortex-pad,vortex-mask-padding,"
             "convert-vortex-to-linalg)");
  fprintf(stdout, "lowered_to_linalg\n");

  mlirContextDestroy(ctx);

  // The named pipeline, down to the LLVM dialect. Its bufferization needs the
  // upstream dialects' external models: register everything.
  // CHECK-NOT: diagnostic
  // CHECK: lowered=1
  // CHECK-DAG: llvm.func @_mlir_ciface_block_sparse_attention_indexer(
  // CHECK-DAG: llvm.func @_mlir_ciface_block_sparse_attention_cache(
  // CHECK-NOT: func.func
  // CHECK: lowered_to_llvm
  registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  vortexRegisterDialects(registry);
  ctx = mlirContextCreate();
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  lower(ctx, "builtin.module(vortex-to-cpu)");
  fprintf(stdout, "lowered_to_llvm\n");
  mlirContextDestroy(ctx);
}

/// Prints the diagnostics of vortexCompileFlow.
static void printCompileDiagnostics(MlirStringRef str, void *userData) {
  (void)userData;
  fprintf(stdout, "compile diagnostics: ");
  fwrite(str.data, 1, str.length, stdout);
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/// Compiles `source`, written to <dir>/<name>.mlir, into <dir>/<name>.
static int compile(const char *dir, const char *name, const char *source,
                   const char *options, char *outDir, size_t outSize) {
  char input[4096];
  snprintf(input, sizeof(input), "%s/%s.mlir", dir, name);
  snprintf(outDir, outSize, "%s/%s", dir, name);
  FILE *f = fopen(input, "w");
  if (!f) {
    fprintf(stdout, "cannot write %s\n", input);
    exit(1);
  }
  fputs(source, f);
  fclose(f);
  MlirLogicalResult result = vortexCompileFlow(
      mlirStringRefCreateFromCString(input),
      mlirStringRefCreateFromCString(outDir),
      mlirStringRefCreateFromCString(options), printCompileDiagnostics, NULL);
  return mlirLogicalResultIsSuccess(result);
}

/// vortexCompileFlow writes a flow's artifacts, or reports why not and
/// writes nothing.
static void testCompile(const char *dir) {
  // CHECK-LABEL: testCompile
  fprintf(stdout, "testCompile\n");
  static char flow[4096];
  const char *at = strstr(kFlow, "TOPK");
  snprintf(flow, sizeof(flow), "%.*s%s%s", (int)(at - kFlow), kFlow, kTopk,
           at + strlen("TOPK"));
  char out[4096], path[4200];

  // CHECK-NOT: compile diagnostics
  // CHECK: compiled=1 manifest=1 library=1
  int ok = compile(dir, "good", flow, "target=cpu", out, sizeof(out));
  snprintf(path, sizeof(path), "%s/block_sparse_attention.manifest.json", out);
  int manifest = exists(path);
  snprintf(path, sizeof(path), "%s/libblock_sparse_attention.so", out);
  fprintf(stdout, "compiled=%d manifest=%d library=%d\n", ok, manifest,
          exists(path));

  // Bad input: an error at its place, and no output directory.
  // CHECK: compile diagnostics: {{.*}}bad.mlir:1:{{[0-9]+}}: error:
  // CHECK: compiled=0 wrote=0
  ok = compile(dir, "bad", "vortex.flow @", "target=cpu", out, sizeof(out));
  fprintf(stdout, "compiled=%d wrote=%d\n", ok, exists(out));

  // Bad options: unknown, or not going together.
  // CHECK: compile diagnostics: vortex-compile: error: options: {{.*}}no such option bogus
  // CHECK: compiled=0 wrote=0
  ok = compile(dir, "badopt", flow, "target=cpu bogus=1", out, sizeof(out));
  fprintf(stdout, "compiled=%d wrote=%d\n", ok, exists(out));
  // CHECK: compile diagnostics: vortex-compile: error: --chip=sm_90 is for GPU targets, not --target=cpu
  // CHECK: compiled=0 wrote=0
  ok = compile(dir, "cpuchip", flow, "target=cpu chip=sm_90", out,
               sizeof(out));
  fprintf(stdout, "compiled=%d wrote=%d\n", ok, exists(out));
}

#ifdef VORTEX_CAPI_TEST_MLIR_FIRST
/// Records the link-map positions of libMLIR.so and libVortexCAPI.so.
static int findLibraries(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  int *pos = data; // [count, libMLIR.so, libVortexCAPI.so]
  ++pos[0];
  if (pos[1] < 0 && strstr(info->dlpi_name, "/libMLIR.so"))
    pos[1] = pos[0];
  if (pos[2] < 0 && strstr(info->dlpi_name, "/libVortexCAPI.so"))
    pos[2] = pos[0];
  return 0;
}

/// The link map is in load order: says which library came first.
static void printLoadOrder(void) {
  int pos[3] = {0, -1, -1};
  dl_iterate_phdr(findLibraries, pos);
  int before = pos[1] >= 0 && pos[2] >= 0 && pos[1] < pos[2];
  fprintf(stdout, "libMLIR.so loaded %s libVortexCAPI.so\n",
          before ? "before" : "not before");
}
#endif

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: vortex-capi-test <scratch directory>\n");
    return 2;
  }
#ifdef VORTEX_CAPI_TEST_MLIR_FIRST
  printLoadOrder();
#endif
  MlirContext ctx = makeContext();
  testTypes(ctx);
  testParse(ctx);
  mlirContextDestroy(ctx);
  testRegistry();
  testFlow();
  testCompile(argv[1]);
  return 0;
}
