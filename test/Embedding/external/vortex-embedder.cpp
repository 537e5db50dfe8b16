//===- vortex-embedder.cpp - Embed the vortex dialect from outside --------===//
//
// Uses the installed Vortex package: creates a context with the vortex
// dialect, builds a !vortex.vtensor type through the C++ API, parses a module
// holding vortex ops, verifies it, inspects it and prints it.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexDialect.h"
#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
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

int main() {
  DialectRegistry registry;
  vortex::registerAllVortexDialects(registry);
  registry.insert<func::FuncDialect>();
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
  return 0;
}
