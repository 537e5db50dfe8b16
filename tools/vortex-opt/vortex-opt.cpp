//===- vortex-opt.cpp - The Vortex optimizer driver -----------------------===//
//
// Like mlir-opt: every upstream dialect, extension and pass, plus the vortex
// dialect, passes and pipelines.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::vortex::registerAllVortexPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  mlir::vortex::registerAllVortexDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Vortex optimizer driver\n", registry));
}
