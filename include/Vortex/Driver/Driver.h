//===- Driver.h - compile a flow into its artifacts -------------*- C++ -*-===//
//
// What vortex-compile does, as a library (the tool parses its arguments into
// CompileOptions and calls compileFile; the C API's vortexCompileFlow does
// the same from a string of options): a module with one vortex.flow to
//   - a GPU chip: <flow>.ptx (vortex-to-nvvm), <flow>.cubin or a cubin per
//     kernel (ptxas, the kernel cache), <flow>.manifest.json;
//   - the CPU: lib<flow>.so (vortex-to-cpu, LLVM's host code generation,
//     the system C compiler), <flow>.manifest.json.
// Everything is reported through the MLIR diagnostic engine: what concerns
// a place in the input at that place, the rest at getDriverLoc(). A compile
// that fails writes no manifest, and nothing at all when the input or the
// options are bad.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DRIVER_DRIVER_H
#define VORTEX_DRIVER_DRIVER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"

#include <functional>
#include <optional>
#include <string>

namespace mlir {
class DialectRegistry;
class PassManager;
} // namespace mlir

namespace mlir::vortex {

/// vortex-compile's flags (tools/vortex-compile, `--help`), one field each.
struct CompileOptions {
  /// -o: the output directory, created if needed.
  std::string outputDir;
  /// --target: "cpu", or a GPU chip (the same as `chip`); empty: a GPU.
  std::string target;
  /// --chip: the GPU architecture; empty: sm_90.
  std::string chip;
  /// --features: NVPTX features; empty: the PTX ISA the chip needs.
  std::string features;
  /// --opt-level: LLVM's and ptxas's optimization level.
  unsigned optLevel = 3;
  /// --llvm-opt-level: LLVM's alone (-1: optLevel).
  int llvmOptLevel = -1;
  /// --cuda-path: the CUDA toolkit; empty: found (findCUDAToolkit).
  std::string cudaPath;
  /// --dump-ir: also write the NVVM dialect (GPU) or the LLVM IR (CPU).
  bool dumpIR = false;
  /// --flow: the flow to compile of a module that holds several.
  std::string flow;
  /// --no-cubin, negated: run ptxas.
  bool cubin = true;
  /// --no-chain-launches, negated.
  bool chainLaunches = true;
  /// --to-gpu: convert-vortex-to-gpu's options.
  std::string toGPU;
  /// --kernel-cache: the kernel cache's directory; empty: none.
  std::string kernelCache;
  /// --kernel-cache-limit: a size (bytes, or with K, M or G); empty: none.
  std::string kernelCacheLimit;
  /// --prebuilt-kernels as given ("none" or empty: none); unset: the
  /// default, $VORTEX_PREBUILT_KERNELS, else <executable's
  /// directory>/../share/vortex/kernels if `executablePath` is set and it
  /// exists.
  std::optional<std::string> prebuiltKernels;
  /// The running executable, for the prebuilt kernels' default directory.
  std::string executablePath;

  /// Called on each pass manager before it runs (a tool applies its
  /// command-line pass manager options here); null: nothing.
  std::function<LogicalResult(PassManager &)> configurePassManager;
  /// Every stage of the compile nests its timer here (MLIR's passes, LLVM's
  /// code generation, ptxas, the host linker); null: untimed.
  TimingScope *timing = nullptr;
};

/// Parses `text`, vortex-compile's flags as `name=value` words without
/// their dashes (`target=cpu`, `no-cubin`, `to-gpu={topk-threads=256}`),
/// into `options`; false with `error` set on an unknown name or a bad value.
LogicalResult parseCompileOptions(StringRef text, CompileOptions &options,
                                  std::string &error);

/// Where the driver reports what is not about a place in the input (a bad
/// option, a tool that failed): a NameLoc that handlers print as
/// "vortex-compile: error: ...".
Location getDriverLoc(MLIRContext *context);
bool isDriverLoc(Location loc);

/// Registers what a compile parses and translates: every upstream dialect
/// and extension, the LLVM IR translations, and the vortex dialects and
/// passes.
void registerCompileDialects(DialectRegistry &registry);

/// Compiles the one flow of `module` (the one named `options.flow`, the
/// others erased) into `options.outputDir`.
LogicalResult compileModule(ModuleOp module, const CompileOptions &options);

/// Checks `options`, reads and parses `inputFilename` ("-": stdin) and
/// compiles it (compileModule). Prints the diagnostics to `diagnostics`: at
/// a place of the input as `file:line:col: error: ...` with the line, at
/// getDriverLoc() as `vortex-compile: error: ...`.
LogicalResult compileFile(MLIRContext &context, StringRef inputFilename,
                          const CompileOptions &options,
                          raw_ostream &diagnostics);

} // namespace mlir::vortex

#endif // VORTEX_DRIVER_DRIVER_H
