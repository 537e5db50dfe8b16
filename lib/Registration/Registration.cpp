//===- Registration.cpp - Register everything Vortex provides -------------===//

#include "Vortex/Registration.h"
#include "Vortex/Conversion/Passes.h"
#include "Vortex/Dialect/VortexDialect.h"
#include "Vortex/Pipelines/Pipelines.h"
#include "Vortex/Transforms/GPU/Passes.h"
#include "Vortex/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"

void mlir::vortex::registerAllVortexDialects(DialectRegistry &registry) {
  registry.insert<VortexDialect>();
}

void mlir::vortex::registerAllVortexPasses() {
  registerVortexTransformsPasses();
  registerVortexGPUPasses();
  registerVortexConversionPasses();
  registerVortexPipelines();
}
