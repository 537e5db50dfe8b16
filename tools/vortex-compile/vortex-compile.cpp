//===- vortex-compile.cpp - Compile a flow to PTX, cubin and manifest -----===//
//
// vortex-compile <flow.mlir> -o <outdir> [--target=cpu|sm_90|...]
//                [--features=...] [--opt-level=3] [--cuda-path=...]
//                [--dump-ir] [--no-cubin]
//
// GPU targets: runs vortex-to-nvvm (PTX in a gpu.binary), writes
// <outdir>/<flow>.ptx, assembles it with ptxas into <outdir>/<flow>.cubin.
// CPU: runs vortex-to-cpu, translates to LLVM IR, emits an object for the
// host and links <outdir>/lib<flow>.so with the system C compiler.
// Both write <outdir>/<flow>.manifest.json from the module attribute
// `vortex.manifest` (docs/manifest.md): the runtime reads nothing else.
//
// The work is the driver library's (Vortex/Driver/Driver.h); this tool
// parses its arguments into CompileOptions.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Driver/Driver.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("vortex-compile options");
static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<flow.mlir>"),
                                          cl::init("-"), cl::cat(category));
static cl::opt<std::string> outputDir("o", cl::desc("Output directory"),
                                      cl::value_desc("outdir"), cl::Required,
                                      cl::cat(category));
static cl::opt<std::string>
    target("target",
           cl::desc("cpu (the host), or a GPU architecture (sm_90, ...; "
                    "default sm_90)"),
           cl::init(""), cl::cat(category));
static cl::opt<std::string> chip("chip",
                                 cl::desc("GPU architecture (default sm_90; "
                                          "same as --target=<chip>)"),
                                 cl::init(""), cl::cat(category));
static cl::opt<std::string>
    features("features",
             cl::desc("NVPTX features, e.g. +ptx80 (default: the PTX ISA the "
                      "chip needs, at least 8.0)"),
             cl::init(""), cl::cat(category));
static cl::opt<unsigned> optLevel("opt-level",
                                  cl::desc("LLVM and ptxas optimization level"),
                                  cl::init(3), cl::cat(category));
static cl::opt<int> llvmOptLevel(
    "llvm-opt-level",
    cl::desc("LLVM optimization level alone (default: --opt-level); ptxas "
             "optimizes the PTX again at --opt-level"),
    cl::init(-1), cl::cat(category));
static cl::opt<std::string>
    cudaPath("cuda-path",
             cl::desc("CUDA toolkit (libdevice, ptxas); default: $CUDA_HOME, "
                      "$CUDA_ROOT, $CUDA_PATH, else /usr/local/cuda"),
             cl::init(""), cl::cat(category));
static cl::opt<bool>
    dumpIR("dump-ir",
           cl::desc("Also write <outdir>/<flow>.nvvm.mlir, the kernels in the "
                    "NVVM dialect right before serialization (GPU), or "
                    "<outdir>/<flow>.ll, the LLVM IR (CPU)"),
           cl::init(false), cl::cat(category));
static cl::opt<std::string>
    flowName("flow",
             cl::desc("Compile this flow of a module that holds several"),
             cl::value_desc("name"), cl::init(""), cl::cat(category));
static cl::opt<bool> noCubin("no-cubin",
                             cl::desc("Do not run ptxas (the manifest then "
                                      "has no \"cubin\")"),
                             cl::init(false), cl::cat(category));

static cl::opt<bool> noChainLaunches(
    "no-chain-launches",
    cl::desc("Launch each kernel of a step only after the one before it has "
             "finished (no programmatic dependent launch; docs/gpu.md)"),
    cl::init(false), cl::cat(category));

static cl::opt<std::string> toGPU(
    "to-gpu",
    cl::desc("convert-vortex-to-gpu's options, as that pass takes them, e.g. "
             "--to-gpu='topk-threads=256 attend-mma=false' "
             "(docs/Passes/VortexConversionPasses.md)"),
    cl::value_desc("options"), cl::init(""), cl::cat(category));

static cl::opt<std::string> kernelCache(
    "kernel-cache",
    cl::desc("Keep each kernel's PTX and cubin in this directory and reuse "
             "them when the kernel comes again; the cubins are then one per "
             "kernel, <kernel>.cubin (manifest artifacts.cubins; docs/gpu.md, "
             "\"Kernel cache\")"),
    cl::value_desc("dir"), cl::init(""), cl::cat(category));

static cl::opt<std::string> kernelCacheLimit(
    "kernel-cache-limit",
    cl::desc("After the compile, remove the kernel cache's least recently "
             "used entries until they take at most this many bytes (a "
             "number, optionally with K, M or G: binary units); default: no "
             "limit"),
    cl::value_desc("size"), cl::init(""), cl::cat(category));

static cl::opt<std::string> prebuiltKernels(
    "prebuilt-kernels",
    cl::desc("Also read kernels from this directory of prebuilt ones, "
             "never written (with --kernel-cache a hit is copied there); the "
             "cubins are then one per kernel, as with --kernel-cache "
             "(default: $VORTEX_PREBUILT_KERNELS if set, else <this tool's "
             "directory>/../share/vortex/kernels if it exists; 'none' or "
             "empty: no such directory; docs/gpu.md, \"Prebuilt kernels\")"),
    cl::value_desc("dir"), cl::init(""), cl::cat(category));

/// Errors before the compile starts.
static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "vortex-compile") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  registerAsmPrinterCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // Only our options in --help; LLVM's and MLIR's stay usable (--help-hidden).
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Compile a vortex flow for the CPU (a shared object) or a GPU (PTX, a "
      "cubin), with its JSON manifest\n");
  DialectRegistry registry;
  vortex::registerCompileDialects(registry);
  // LLVM's own options stay registered (hidden); one of them given on our
  // command line is a mistake, not a setting (`--threads=0` used to pass).
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *opt = entry.second;
    if (!opt->getNumOccurrences() ||
        llvm::is_contained(opt->Categories, &category) ||
        entry.first.starts_with("mlir-"))
      continue;
    return fail("--" + entry.first +
                " is not a vortex-compile option (see --help)");
  }

  vortex::CompileOptions options;
  options.outputDir = outputDir;
  options.target = target;
  options.chip = chip;
  options.features = features;
  options.optLevel = optLevel;
  options.llvmOptLevel = llvmOptLevel;
  options.cudaPath = cudaPath;
  options.dumpIR = dumpIR;
  options.flow = flowName;
  options.cubin = !noCubin;
  options.chainLaunches = !noChainLaunches;
  options.toGPU = toGPU;
  options.kernelCache = kernelCache;
  options.kernelCacheLimit = kernelCacheLimit;
  if (prebuiltKernels.getNumOccurrences())
    options.prebuiltKernels = prebuiltKernels.getValue();
  options.executablePath = llvm::sys::fs::getMainExecutable(
      argv[0], reinterpret_cast<void *>(&fail));
  options.configurePassManager = [](PassManager &pm) {
    return applyPassManagerCLOptions(pm);
  };

  MLIRContext context(registry);
  // --mlir-timing: the whole compile, from parsing to the last file, in
  // one report (printed when `timing` goes out of scope).
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope total = timing.getRootScope();
  options.timing = &total;
  return failed(vortex::compileFile(context, inputFilename, options,
                                    llvm::errs()));
}
