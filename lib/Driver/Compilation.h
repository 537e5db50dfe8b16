//===- Compilation.h - what the driver's targets share ----------*- C++ -*-===//
//
// Internal to lib/Driver: the state of one compile, handed to the GPU and
// the CPU back ends (CompileGPU.cpp, CompileCPU.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_DRIVER_COMPILATION_H
#define VORTEX_LIB_DRIVER_COMPILATION_H

#include "Vortex/Driver/Driver.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::vortex::driver {

/// The module being compiled, whether a diagnostic reported an error, the
/// options (checked), and where the outputs go.
struct Compilation {
  ModuleOp module;
  bool &sawError;
  /// Every stage of the compile nests its timer here.
  TimingScope &timing;
  const CompileOptions &options;
  /// Where errors that are not about the input go (getDriverLoc).
  Location driverLoc;
  /// The file stem of every output: the manifest's "flow".
  std::string flow;

  /// <outputDir>/<flow><suffix>.
  std::string outPath(StringRef suffix) const;
  /// Creates the output directory (an error when it cannot).
  LogicalResult createOutputDir() const;
  /// Writes `contents` to <outputDir>/<flow><suffix>.
  LogicalResult writeOutput(StringRef suffix, StringRef contents) const;
  /// Runs the passes `build` adds on the module, timed as the stage `stage`.
  /// Fails on a pass failure or an error diagnostic (some passes report one
  /// and still succeed).
  LogicalResult runStage(StringRef stage,
                         function_ref<void(OpPassManager &)> build);
};

/// The GPU chip (`--chip`, default sm_90).
std::string chipName(const CompileOptions &options);

/// Compiles for a GPU: PTX, cubins, the manifest.
LogicalResult compileGPU(Compilation &c);
/// Compiles for the host: lib<flow>.so, the manifest.
LogicalResult compileCPU(Compilation &c);

} // namespace mlir::vortex::driver

#endif // VORTEX_LIB_DRIVER_COMPILATION_H
