//===- VortexPlugin.cpp - Vortex dialect and pass plugin for mlir-opt -----===//

#include "Vortex/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

/// Entry point of `mlir-opt --load-dialect-plugin`.
extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Vortex", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::vortex::registerAllVortexDialects(*registry);
          }};
}

/// Entry point of `mlir-opt --load-pass-plugin`.
extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "VortexPasses", LLVM_VERSION_STRING,
          []() { mlir::vortex::registerAllVortexPasses(); }};
}
