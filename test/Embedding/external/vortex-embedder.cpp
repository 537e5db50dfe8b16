//===- vortex-embedder.cpp - Embed the vortex dialect from outside --------===//
//
// Uses the installed Vortex package: creates a context with the vortex
// dialect, builds a !vortex.vtensor type through the C++ API, parses a module
// holding vortex ops, verifies it, inspects it and prints it. Then lowers
// vortex ops with its own pass: a dialect conversion made of Vortex's
// populate functions and type converter together with upstream's
// function-signature patterns.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"
#include "Vortex/Dialect/VortexDialect.h"
#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static const char *kSource = R"mlir(
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
func.func @query_mean(%q: !q) -> !qm {
  %m = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  return %m : !qm
}
)mlir";

// Scores of batched queries (reduction, elementwise): convertible outside a
// flow.
static const char *kBatched = R"mlir(
!q = !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
func.func @query_energy(%q: !q) -> !s {
  %m = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %sq = vortex.multiply %m, %m : (!qm, !qm) -> !qm
  %e = vortex.sum %sq {dim = 2 : i64} : !qm -> !s
  return %e : !s
}
)mlir";

// A paged operand is addressed through a flow's block lists: outside a flow
// the conversion refuses it.
static const char *kPaged = R"mlir(
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!e = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
func.func @block_max(%k: !kv) -> !e {
  %m = vortex.max %k {dim = 1 : i64} : !kv -> !e
  return %m : !e
}
)mlir";

/// The embedder's own pass: a dialect conversion with Vortex's patterns
/// and type converter plus upstream's function-signature and return
/// patterns.
struct EmbedderLowerVortexPass
    : PassWrapper<EmbedderLowerVortexPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EmbedderLowerVortexPass)
  StringRef getArgument() const final { return "embedder-lower-vortex"; }

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    vortex::VortexToLinalgTypeConverter converter;
    RewritePatternSet patterns(ctx);
    vortex::populateVortexElementwiseToLinalgPatterns(converter, patterns);
    vortex::populateVortexReductionToLinalgPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    ConversionTarget target(*ctx);
    vortex::configureVortexToLinalgConversionTarget(target);
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp op) { return converter.isLegal(op); });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

static LogicalResult lowerToLinalg(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(std::make_unique<EmbedderLowerVortexPass>());
  return pm.run(module);
}

int main() {
  DialectRegistry registry;
  vortex::registerAllVortexDialects(registry);
  // What the lowering produces.
  registry.insert<func::FuncDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, linalg::LinalgDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::outs() << "vortex dialect loaded: "
               << (context.getLoadedDialect<vortex::VortexDialect>() != nullptr)
               << "\n";

  // A type built through the C++ API.
  auto vt = vortex::VTensorType::get({ShapedType::kDynamic, 5, 128},
                                     BFloat16Type::get(&context),
                                     vortex::Format::Batched);
  llvm::outs() << "type: " << vt << "\n";
  llvm::outs() << "padded D0: " << vt.getPaddedShape()[1]
               << ", needs padding: " << vt.needsPadding() << "\n";

  // A module with vortex ops: parsed (which verifies), verified again, walked
  // and printed.
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kSource, &context);
  if (!module) {
    llvm::errs() << "parse failed\n";
    return 1;
  }
  if (failed(verify(*module))) {
    llvm::errs() << "verification failed\n";
    return 1;
  }
  llvm::outs() << "verified\n";
  module->walk([](vortex::MeanOp op) {
    llvm::outs() << "mean over dim " << op.getDim() << ": "
                 << op.getResult().getType() << "\n";
  });
  module->print(llvm::outs());

  OwningOpRef<ModuleOp> batched =
      parseSourceString<ModuleOp>(kBatched, &context);
  if (!batched || failed(lowerToLinalg(*batched)) || failed(verify(*batched))) {
    llvm::errs() << "lowering the batched module failed\n";
    return 1;
  }
  llvm::outs() << "lowered:\n";
  batched->print(llvm::outs());

  OwningOpRef<ModuleOp> paged = parseSourceString<ModuleOp>(kPaged, &context);
  if (!paged)
    return 1;
  // The diagnostic goes to stderr; the module is left as it was.
  llvm::outs() << "paged outside a flow: "
               << (failed(lowerToLinalg(*paged)) ? "refused" : "lowered")
               << "\n";
  bool unchanged = false;
  paged->walk([&](vortex::MaxOp) { unchanged = true; });
  llvm::outs() << "paged module unchanged: " << unchanged << "\n";
  return 0;
}
