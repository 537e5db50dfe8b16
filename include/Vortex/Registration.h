//===- Registration.h - Register everything Vortex provides -----*- C++ -*-===//
//
// One entry point for tools, the plugin and embedders.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_REGISTRATION_H
#define VORTEX_REGISTRATION_H

namespace mlir {
class DialectRegistry;
namespace vortex {

/// Insert the vortex dialect (and the dialects its lowerings create).
void registerAllVortexDialects(DialectRegistry &registry);

/// Register every vortex pass and named pipeline with the global registry.
void registerAllVortexPasses();

} // namespace vortex
} // namespace mlir

#endif // VORTEX_REGISTRATION_H
