//===- Driver.cpp - compile a flow into its artifacts ---------------------===//
//
// The entry points of the driver: the options checked, the input parsed,
// the flow picked, and the back end run (CompileGPU.cpp, CompileCPU.cpp).
//
//===----------------------------------------------------------------------===//

#include "Compilation.h"

#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Registration.h"
#include "Vortex/Target/Support.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <mutex>

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::driver;

static constexpr llvm::StringLiteral kDriverName = "vortex-compile";

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

namespace {
/// CompileOptions as text: the names of vortex-compile's flags (their help
/// is the tool's), parsed by MLIR's pass-option parser.
struct CompileOptionsText : PassPipelineOptions<CompileOptionsText> {
  Option<std::string> target{*this, "target"};
  Option<std::string> chip{*this, "chip"};
  Option<std::string> features{*this, "features"};
  Option<unsigned> optLevel{*this, "opt-level", llvm::cl::init(3)};
  Option<int> llvmOptLevel{*this, "llvm-opt-level", llvm::cl::init(-1)};
  Option<std::string> cudaPath{*this, "cuda-path"};
  Option<bool> dumpIR{*this, "dump-ir", llvm::cl::init(false)};
  Option<std::string> flow{*this, "flow"};
  Option<bool> noCubin{*this, "no-cubin", llvm::cl::init(false)};
  Option<bool> noChainLaunches{*this, "no-chain-launches",
                               llvm::cl::init(false)};
  Option<std::string> toGPU{*this, "to-gpu"};
  Option<std::string> kernelCache{*this, "kernel-cache"};
  Option<std::string> kernelCacheLimit{*this, "kernel-cache-limit"};
  Option<std::string> prebuiltKernels{*this, "prebuilt-kernels"};
};
} // namespace

LogicalResult vortex::parseCompileOptions(StringRef text,
                                          CompileOptions &options,
                                          std::string &error) {
  CompileOptionsText parsed;
  llvm::raw_string_ostream os(error);
  if (failed(parsed.parseFromString(text, os))) {
    error = StringRef(error).rtrim().str();
    if (error.empty())
      error = "cannot parse the options '" + text.str() + "'";
    return failure();
  }
  options.target = parsed.target;
  options.chip = parsed.chip;
  options.features = parsed.features;
  options.optLevel = parsed.optLevel;
  options.llvmOptLevel = parsed.llvmOptLevel;
  options.cudaPath = parsed.cudaPath;
  options.dumpIR = parsed.dumpIR;
  options.flow = parsed.flow;
  options.cubin = !parsed.noCubin;
  options.chainLaunches = !parsed.noChainLaunches;
  options.toGPU = parsed.toGPU;
  options.kernelCache = parsed.kernelCache;
  options.kernelCacheLimit = parsed.kernelCacheLimit;
  if (parsed.prebuiltKernels.hasValue())
    options.prebuiltKernels = parsed.prebuiltKernels.getValue();
  return success();
}

std::string driver::chipName(const CompileOptions &options) {
  return options.chip.empty() ? "sm_90" : options.chip;
}

/// `options` with --target folded into --chip, checked for what does not
/// go together.
static FailureOr<CompileOptions> resolveOptions(const CompileOptions &options,
                                                Location loc) {
  CompileOptions resolved = options;
  bool cpu = options.target == "cpu";
  if (!options.target.empty() && !cpu) {
    if (!options.chip.empty() && options.chip != options.target)
      return emitError(loc) << "--target=" << options.target
                            << " and --chip=" << options.chip << " disagree";
    resolved.chip = options.target;
  }
  if (!cpu)
    return resolved;
  if (!options.chip.empty())
    return emitError(loc) << "--chip=" << options.chip
                          << " is for GPU targets, not --target=cpu";
  if (options.prebuiltKernels && !options.prebuiltKernels->empty() &&
      *options.prebuiltKernels != "none")
    return emitError(loc)
           << "--prebuilt-kernels is for GPU targets, not --target=cpu";
  if (!options.kernelCache.empty() || !options.kernelCacheLimit.empty())
    return emitError(loc) << (options.kernelCache.empty()
                                  ? "--kernel-cache-limit"
                                  : "--kernel-cache")
                          << " is for GPU targets, not --target=cpu";
  return resolved;
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

std::string Compilation::outPath(StringRef suffix) const {
  SmallString<128> path(options.outputDir);
  llvm::sys::path::append(path, flow + suffix);
  return std::string(path);
}

LogicalResult Compilation::createOutputDir() const {
  if (std::error_code ec =
          llvm::sys::fs::create_directories(options.outputDir))
    return emitError(driverLoc) << "cannot create '" << options.outputDir
                                << "': " << ec.message();
  return success();
}

LogicalResult Compilation::writeOutput(StringRef suffix,
                                       StringRef contents) const {
  return writeArtifact(outPath(suffix), contents, driverLoc);
}

LogicalResult
Compilation::runStage(StringRef stage,
                      function_ref<void(OpPassManager &)> build) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (options.configurePassManager &&
      failed(options.configurePassManager(pm)))
    return failure();
  TimingScope time = timing.nest(stage);
  pm.enableTiming(time);
  build(pm);
  return failure(failed(pm.run(module)) || sawError);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

Location vortex::getDriverLoc(MLIRContext *context) {
  return NameLoc::get(StringAttr::get(context, kDriverName));
}

bool vortex::isDriverLoc(Location loc) {
  auto name = dyn_cast<NameLoc>(loc);
  return name && name.getName() == kDriverName &&
         isa<UnknownLoc>(name.getChildLoc());
}

void vortex::registerCompileDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerAllGPUToLLVMIRTranslations(registry);
  registerAllVortexDialects(registry);
  // The pipelines look passes up by name (convert-vortex-to-gpu).
  static std::once_flag passes;
  std::call_once(passes, [] { registerAllVortexPasses(); });
}

/// Keeps the flow `name` of several (the others erased); without a name,
/// fails when there are several.
static LogicalResult selectFlow(ModuleOp module, StringRef name) {
  auto flows = llvm::to_vector(module.getOps<FlowOp>());
  if (!name.empty()) {
    auto it = llvm::find_if(
        flows, [&](FlowOp f) { return f.getSymName() == name; });
    if (it == flows.end()) {
      InFlightDiagnostic diag = emitError(module.getLoc())
                                << "no vortex.flow @" << name;
      for (FlowOp f : flows)
        diag.attachNote(f.getLoc()) << "vortex.flow @" << f.getSymName();
      return failure();
    }
    for (FlowOp f : flows)
      if (f != *it)
        f.erase();
  } else if (flows.size() > 1) {
    InFlightDiagnostic diag = emitError(module.getLoc())
                              << "the module holds " << flows.size()
                              << " flows; pick one with --flow=<name>:";
    for (FlowOp f : flows)
      diag << " @" << f.getSymName();
    return failure();
  }
  return success();
}

LogicalResult vortex::compileModule(ModuleOp module,
                                    const CompileOptions &options) {
  MLIRContext *context = module.getContext();
  Location driverLoc = getDriverLoc(context);
  FailureOr<CompileOptions> resolved = resolveOptions(options, driverLoc);
  if (failed(resolved))
    return failure();
  // Some passes (gpu-module-to-binary) report an error and still succeed.
  bool sawError = false;
  ScopedDiagnosticHandler errorTracker(context, [&](Diagnostic &diag) {
    sawError |= diag.getSeverity() == DiagnosticSeverity::Error;
    return failure(); // Let the next handler print it.
  });
  if (failed(selectFlow(module, resolved->flow)))
    return failure();
  TimingScope untimed;
  Compilation c{module,    sawError, options.timing ? *options.timing : untimed,
                *resolved, driverLoc, ""};
  return resolved->target == "cpu" ? compileCPU(c) : compileGPU(c);
}

/// Prints a diagnostic at the driver as `vortex-compile: error: ...`.
static LogicalResult printDriverDiagnostic(Diagnostic &diag,
                                           raw_ostream &os) {
  if (!isDriverLoc(diag.getLocation()))
    return failure();
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    llvm::WithColor::error(os, kDriverName);
    break;
  case DiagnosticSeverity::Warning:
    llvm::WithColor::warning(os, kDriverName);
    break;
  case DiagnosticSeverity::Note:
    llvm::WithColor::note(os, kDriverName);
    break;
  case DiagnosticSeverity::Remark:
    llvm::WithColor::remark(os, kDriverName);
    break;
  }
  os << diag.str() << "\n";
  return success();
}

LogicalResult vortex::compileFile(MLIRContext &context,
                                  StringRef inputFilename,
                                  const CompileOptions &options,
                                  raw_ostream &diagnostics) {
  // The input's buffer joins the source manager once read: the handlers
  // are in place first, for the errors before it.
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler sourceHandler(sourceMgr, &context, diagnostics);
  ScopedDiagnosticHandler driverHandler(&context, [&](Diagnostic &diag) {
    return printDriverDiagnostic(diag, diagnostics);
  });
  // Point at the op; dumping all of it (a whole gpu.module) buries the error.
  context.printOpOnDiagnostic(false);
  Location driverLoc = getDriverLoc(&context);
  if (failed(resolveOptions(options, driverLoc)))
    return failure();

  TimingScope untimed;
  TimingScope parseTime =
      (options.timing ? *options.timing : untimed).nest("parse");
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input)
    return emitError(driverLoc) << error;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return failure();
  parseTime.stop();
  return compileModule(*module, options);
}
