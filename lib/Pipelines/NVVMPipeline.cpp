//===- NVVMPipeline.cpp - The vortex-to-nvvm pipeline ---------------------===//
//
// From kernels in gpu.modules (convert-vortex-to-gpu's output, or a vortex
// flow if that pass is registered) to a gpu.binary holding PTX. This is the
// "kernel-only device pipeline" of the toolchain notes (§B3) plus the passes
// that close MLIR 22.1.8's gaps (subgroup ops, vector transfers, libdevice).
//
//===----------------------------------------------------------------------===//

#include "Vortex/Pipelines/Pipelines.h"
#include "Vortex/Conversion/Passes.h"
#include "Vortex/Transforms/GPU/Passes.h"
#include "Vortex/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

using namespace mlir;

namespace {

struct ChipInfo {
  llvm::StringLiteral name;
  /// Lowest PTX ISA (x10) LLVM 22 emits for the chip; below it LLVM aborts.
  unsigned minPTX;
};

// The chips both LLVM 22's NVPTX backend and CUDA 13's ptxas accept
// (ptxas 13 dropped sm_50..sm_72 and renamed sm_101 to sm_110).
constexpr ChipInfo kChips[] = {
    {"sm_75", 63},   {"sm_80", 70},   {"sm_86", 71},   {"sm_87", 74},
    {"sm_88", 90},   {"sm_89", 78},   {"sm_90", 78},   {"sm_90a", 80},
    {"sm_100", 86},  {"sm_100a", 86}, {"sm_100f", 88}, {"sm_103", 88},
    {"sm_103a", 88}, {"sm_103f", 88}, {"sm_110", 90},  {"sm_110a", 90},
    {"sm_110f", 90}, {"sm_120", 87},  {"sm_120a", 87}, {"sm_120f", 88},
    {"sm_121", 88},  {"sm_121a", 88}, {"sm_121f", 88}};

// PTX ISA versions (x10) LLVM 22 knows as +ptxNN features; 9.0 is also the
// newest ptxas 13.0 reads.
constexpr unsigned kPTXVersions[] = {32, 40, 41, 42, 43, 50, 60, 61, 62,
                                     63, 64, 65, 70, 71, 72, 73, 74, 75,
                                     76, 77, 78, 80, 81, 82, 83, 84, 85,
                                     86, 87, 88, 90};

// Our kernels are tested with PTX ISA 8.0 (the driver floor we ship for).
constexpr unsigned kDefaultPTX = 80;

const ChipInfo *lookupChip(StringRef chip) {
  const auto *it = llvm::find_if(
      kChips, [&](const ChipInfo &info) { return info.name == chip; });
  return it == std::end(kChips) ? nullptr : it;
}

bool hasLibdevice(StringRef toolkit) {
  SmallString<128> path(toolkit);
  llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
  return llvm::sys::fs::is_regular_file(path);
}

std::string formatPTX(unsigned version) {
  return std::to_string(version / 10) + "." + std::to_string(version % 10);
}

/// convert-vortex-to-gpu with the pipeline's `to-gpu` options (checked by
/// verifyVortexNVVMPipelineOptions). bf16 mma.sync needs sm_80: older chips
/// default to the fused multiply-adds; options given later win.
std::string toGPUOptions(const vortex::VortexNVVMPipelineOptions &options) {
  std::string defaults;
  if (vortex::parseSMVersion(options.chip).value_or(0) < 80)
    defaults = "envelope-mma=false attend-mma=false ";
  return defaults + options.toGPU.getValue();
}

std::unique_ptr<Pass>
convertToGPU(const vortex::VortexNVVMPipelineOptions &options) {
  std::unique_ptr<Pass> pass = vortex::createConvertVortexToGPU();
  // Verified before the pipeline is built: cannot fail here.
  (void)pass->initializeOptions(toGPUOptions(options),
                                [](const Twine &) { return failure(); });
  return pass;
}

} // namespace

LogicalResult vortex::verifyVortexNVVMPipelineOptions(
    const VortexNVVMPipelineOptions &options, std::string &error) {
  const ChipInfo *chip = lookupChip(options.chip);
  if (!chip) {
    error = "unsupported chip '" + options.chip.getValue() +
            "'; expected one of";
    for (const ChipInfo &info : kChips)
      error += " " + info.name.str();
    return failure();
  }
  SmallVector<StringRef> features;
  StringRef(options.features).split(features, ',', -1, /*KeepEmpty=*/false);
  for (StringRef feature : features) {
    feature = feature.trim();
    unsigned version;
    if (!feature.consume_front("+ptx"))
      continue;
    if (feature.getAsInteger(10, version) ||
        !llvm::is_contained(kPTXVersions, version)) {
      error = "unknown PTX ISA feature '+ptx" + feature.str() +
              "' (LLVM 22 knows +ptx32 ... +ptx90)";
      return failure();
    }
    if (version < chip->minPTX) {
      error = "chip " + options.chip.getValue() + " needs PTX ISA " +
              formatPTX(chip->minPTX) + " or newer (+ptx" +
              std::to_string(chip->minPTX) + "), but features select " +
              formatPTX(version);
      return failure();
    }
  }
  if (options.optLevel > 3) {
    error = "opt-level must be 0, 1, 2 or 3, got " +
            std::to_string(options.optLevel);
    return failure();
  }
  if (!llvm::is_contained({"isa", "bin", "fatbin", "llvm"},
                          StringRef(options.format))) {
    error = "unknown format '" + options.format.getValue() +
            "'; expected isa, bin, fatbin or llvm";
    return failure();
  }
  // gpu-module-to-binary reports a bad toolkit but goes on without
  // libdevice, so catch it here.
  std::string toolkit = findCUDAToolkit(options.cudaPath);
  if (!toolkit.empty() && !hasLibdevice(toolkit)) {
    error = "no libdevice in the CUDA toolkit '" + toolkit + "' (" +
            (options.cudaPath.empty() ? "from the environment"
                                      : "from cuda-path") +
            "): expected nvvm/libdevice/libdevice.10.bc there";
    return failure();
  }
  std::string toGPUError;
  if (failed(vortex::createConvertVortexToGPU()->initializeOptions(
          toGPUOptions(options), [&](const Twine &msg) {
            toGPUError = msg.str();
            return failure();
          }))) {
    error = "to-gpu: " + (toGPUError.empty() ? std::string("bad options '") +
                                                   options.toGPU.getValue() +
                                                   "'"
                                             : toGPUError);
    return failure();
  }
  return success();
}

std::string
vortex::getVortexNVVMFeatures(const VortexNVVMPipelineOptions &options) {
  if (!options.features.empty())
    return options.features;
  const ChipInfo *chip = lookupChip(options.chip);
  unsigned version = chip ? std::max(chip->minPTX, kDefaultPTX) : kDefaultPTX;
  return "+ptx" + std::to_string(version);
}

std::string vortex::findCUDAToolkit(StringRef requested) {
  if (!requested.empty())
    return requested.str();
  for (const char *var : {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"})
    if (std::optional<std::string> path = llvm::sys::Process::GetEnv(var);
        path && !path->empty())
      return *path;
  if (hasLibdevice("/usr/local/cuda"))
    return "/usr/local/cuda";
  return "";
}

void vortex::buildVortexNVVMLowerStage(
    OpPassManager &pm, const VortexNVVMPipelineOptions &options) {
  // A flow that has not been through the GPU code generator yet (the passes
  // leave a module without flows unchanged). Linked, not looked up by name:
  // the pipeline works without any pass registration.
  pm.addPass(createVortexFuse());
  pm.addPass(createVortexPadToPow2());
  pm.addPass(createVortexMaskPadding());
  pm.addPass(convertToGPU(options));
  if (options.chainLaunches) {
    VortexGPUChainLaunchesOptions chain;
    chain.chip = options.chip;
    pm.addPass(createVortexGPUChainLaunches(chain));
  }

  // Close MLIR 22's gaps before anything lowers to LLVM. On each function
  // (any op) of a module: the pass manager runs them on separate threads.
  OpPassManager &prepare = pm.nest<gpu::GPUModuleOp>().nestAny();
  VortexGPULowerFp8Options fp8;
  fp8.chip = options.chip;
  prepare.addPass(createVortexGPULowerFp8(fp8));
  prepare.addPass(createVortexGPULowerSubgroupReduce());
  prepare.addPass(createVortexGPULowerVectorTransfers());
  prepare.addPass(createSCFToControlFlowPass());
  prepare.addPass(memref::createExpandStridedMetadataPass());
  prepare.addPass(createLowerAffinePass());
  // Before convert-gpu-to-nvvm, or affine index math leaves an
  // unrealized_conversion_cast (i64 -> index) that translation rejects.
  prepare.addPass(createArithToLLVMConversionPass());
  prepare.addPass(createConvertIndexToLLVMPass());
  prepare.addPass(createCanonicalizerPass());
  prepare.addPass(createCSEPass());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = getVortexNVVMFeatures(options);
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));

  OpPassManager &lower = pm.nest<gpu::GPUModuleOp>();
  lower.addPass(createConvertGpuOpsToNVVMOps());
  OpPassManager &cleanup = lower.nestAny();
  cleanup.addPass(createCanonicalizerPass());
  cleanup.addPass(createCSEPass());
  cleanup.addPass(createReconcileUnrealizedCastsPass());
  // After the cleanup, which folds the memref descriptors' insert/extract
  // pairs the pass would otherwise look through.
  cleanup.addPass(createVortexGPULowerNontemporalLoads());
}

void vortex::buildVortexNVVMBinaryStage(
    OpPassManager &pm, const VortexNVVMPipelineOptions &options) {
  // gpu-module-to-binary, but PTX is compiled a kernel per thread.
  VortexGPUSerializeKernelsOptions binary;
  binary.format = options.format;
  // Debian's MLIR has no compiled-in toolkit path: without one, math ops stay
  // unresolved libdevice calls (.extern .func __nv_expf) in the PTX.
  binary.toolkitPath = findCUDAToolkit(options.cudaPath);
  binary.cacheDir = options.kernelCache;
  binary.prebuiltDir = options.prebuiltKernels;
  pm.addPass(createVortexGPUSerializeKernels(binary));
}

void vortex::buildVortexToNVVMPipeline(
    OpPassManager &pm, const VortexNVVMPipelineOptions &options) {
  buildVortexNVVMLowerStage(pm, options);
  buildVortexNVVMBinaryStage(pm, options);
}

namespace {
using StageBuilder = void (*)(OpPassManager &,
                              const vortex::VortexNVVMPipelineOptions &);

/// Like PassPipelineRegistration, but rejects bad options with a message
/// instead of letting LLVM abort on them later.
void registerNVVMPipeline(StringRef arg, StringRef description,
                          StageBuilder builder) {
  registerPassPipeline(
      arg, description,
      [builder](OpPassManager &pm, StringRef optionsStr,
                function_ref<LogicalResult(const Twine &)> errorHandler) {
        vortex::VortexNVVMPipelineOptions options;
        if (failed(options.parseFromString(optionsStr)))
          return failure();
        std::string error;
        if (failed(vortex::verifyVortexNVVMPipelineOptions(options, error)))
          return errorHandler(error);
        builder(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(vortex::VortexNVVMPipelineOptions());
      });
}
} // namespace

void vortex::registerVortexNVVMPipelines() {
  registerNVVMPipeline(
      "vortex-to-nvvm",
      "Compile vortex flows, or the kernels of gpu.modules, to PTX in a "
      "gpu.binary (stages: vortex-nvvm-stage-lower, -binary)",
      buildVortexToNVVMPipeline);
  registerNVVMPipeline("vortex-nvvm-stage-lower",
                       "vortex-to-nvvm stage 1: kernels to the NVVM dialect",
                       buildVortexNVVMLowerStage);
  registerNVVMPipeline(
      "vortex-nvvm-stage-binary",
      "vortex-to-nvvm stage 2: serialize gpu.modules with libdevice",
      buildVortexNVVMBinaryStage);
}
