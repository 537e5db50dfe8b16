//===- CompileGPU.cpp - a flow to PTX, cubins and its manifest ------------===//
//
// vortex-to-nvvm in two stages (the kernels in the NVVM dialect, then PTX in
// a gpu.binary), the PTX written, ptxas on it (whole, or a cubin per kernel
// through the kernel cache), and the manifest.
//
//===----------------------------------------------------------------------===//

#include "Compilation.h"

#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Pipelines/Pipelines.h"
#include "Vortex/Target/KernelCache.h"
#include "Vortex/Target/Manifest.h"
#include "Vortex/Target/PTXAssembler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <limits>

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::driver;

static constexpr llvm::StringLiteral kManifestAttr = abi::kManifestAttrName;

/// Whether a prebuilt-kernels setting names no directory ("none" or empty).
static bool isNoDirectory(StringRef setting) {
  return setting.empty() || setting == "none";
}

/// The directory of prebuilt kernels (empty: none): --prebuilt-kernels,
/// else $VORTEX_PREBUILT_KERNELS, else the one installed beside the
/// executable (<bindir>/../share/vortex/kernels) if it exists. One named
/// explicitly must exist. Read with or without --kernel-cache, never written.
static LogicalResult resolvePrebuiltKernels(const Compilation &c,
                                            std::string &dir) {
  dir.clear();
  const std::optional<std::string> &named = c.options.prebuiltKernels;
  if (named) {
    if (isNoDirectory(*named))
      return success();
    if (!llvm::sys::fs::is_directory(*named))
      return emitError(c.driverLoc) << "--prebuilt-kernels: '" << *named
                                    << "' is not a directory";
    dir = *named;
    return success();
  }
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("VORTEX_PREBUILT_KERNELS")) {
    if (!isNoDirectory(*env) && llvm::sys::fs::is_directory(*env))
      dir = *env;
    return success();
  }
  StringRef exe = c.options.executablePath;
  SmallString<256> installed(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(installed, "..", "share", "vortex", "kernels");
  llvm::sys::path::remove_dots(installed, /*remove_dot_dot=*/true);
  if (!exe.empty() && llvm::sys::fs::is_directory(installed))
    dir = std::string(installed);
  return success();
}

/// The NVVM pipeline's options from the compile's, checked.
static LogicalResult gpuPipelineOptions(const Compilation &c,
                                        VortexNVVMPipelineOptions &options) {
  const CompileOptions &o = c.options;
  options.chip = chipName(o);
  options.features = o.features;
  if (o.llvmOptLevel > 3 || o.llvmOptLevel < -1)
    return emitError(c.driverLoc)
           << "--llvm-opt-level must be 0, 1, 2 or 3, got "
           << std::to_string(o.llvmOptLevel);
  options.optLevel = o.llvmOptLevel < 0 ? o.optLevel
                                        : static_cast<unsigned>(o.llvmOptLevel);
  options.cudaPath = o.cudaPath;
  // PTX in the gpu.binary; the cubin comes from our own ptxas run.
  options.format = "isa";
  options.chainLaunches = o.chainLaunches;
  options.toGPU = o.toGPU;
  options.kernelCache = o.kernelCache;
  if (failed(resolvePrebuiltKernels(c, options.prebuiltKernels)))
    return failure();
  std::string error;
  if (failed(verifyVortexNVVMPipelineOptions(options, error)))
    return emitError(c.driverLoc) << error;
  return success();
}

/// --kernel-cache-limit in bytes: nothing without one, failure (reported)
/// when it is not a size or comes without --kernel-cache.
static FailureOr<std::optional<uint64_t>>
parseKernelCacheLimit(const Compilation &c) {
  StringRef text = StringRef(c.options.kernelCacheLimit).trim();
  if (text.empty())
    return std::optional<uint64_t>();
  if (c.options.kernelCache.empty())
    return emitError(c.driverLoc)
           << "--kernel-cache-limit needs --kernel-cache";
  unsigned shift = 0;
  switch (llvm::toUpper(text.back())) {
  case 'K':
    shift = 10;
    break;
  case 'M':
    shift = 20;
    break;
  case 'G':
    shift = 30;
    break;
  default:
    break;
  }
  if (shift)
    text = text.drop_back();
  uint64_t value;
  if (text.getAsInteger(10, value) ||
      (shift && value > (std::numeric_limits<uint64_t>::max() >> shift)))
    return emitError(c.driverLoc)
           << "--kernel-cache-limit: '" << c.options.kernelCacheLimit
           << "' is not a size (bytes, or a number with K, M or G)";
  return std::optional<uint64_t>(value << shift);
}

/// The kernels of the module's one gpu.module (stage 1's output), in order.
static FailureOr<gpu::GPUModuleOp>
kernelsOf(ModuleOp module, SmallVectorImpl<std::string> &kernels) {
  auto gpuModules = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() != 1) {
    InFlightDiagnostic diag = emitError(module.getLoc());
    if (gpuModules.empty())
      diag << "no gpu.module to compile: expected the kernels of "
              "convert-vortex-to-gpu";
    else
      diag << "expected one gpu.module, found " << gpuModules.size();
    for (gpu::GPUModuleOp gpuModule : gpuModules)
      diag.attachNote(gpuModule.getLoc()) << "gpu.module here";
    return failure();
  }
  gpu::GPUModuleOp gpuModule = gpuModules.front();
  for (auto func : gpuModule.getOps<LLVM::LLVMFuncOp>())
    if (func->hasAttr(gpu::GPUDialect::getKernelFuncAttrName()))
      kernels.push_back(func.getName().str());
  if (kernels.empty())
    return emitError(gpuModule.getLoc())
           << "gpu.module @" << gpuModule.getName() << " has no kernel";
  return gpuModule;
}

/// The PTX in the module's one gpu.binary (stage 2's output), if it calls
/// no unlinked libdevice function.
static FailureOr<StringRef> ptxOf(ModuleOp module, StringRef toolkit) {
  Location moduleLoc = module.getLoc();
  auto binaries = llvm::to_vector(module.getOps<gpu::BinaryOp>());
  if (binaries.size() != 1 || binaries.front().getObjects().size() != 1)
    return emitError(moduleLoc) << "expected one gpu.binary holding one object";
  auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
  if (object.getFormat() != gpu::CompilationTarget::Assembly)
    return emitError(moduleLoc) << "expected PTX in the gpu.binary";
  StringRef ptx = object.getObject().getValue();
  // Without libdevice, math ops stay calls that ptxas cannot resolve.
  if (size_t pos = ptx.find(".extern .func"); pos != StringRef::npos) {
    size_t name = ptx.find("__nv_", pos);
    StringRef callee =
        name == StringRef::npos
            ? StringRef("a function")
            : ptx.substr(name).take_while([](char c) {
                return llvm::isAlnum(c) || c == '_';
              });
    return emitError(moduleLoc)
           << "the PTX calls " << callee
           << " but no libdevice was linked: pass --cuda-path=<CUDA toolkit> "
              "or set CUDA_HOME"
           << (toolkit.empty() ? " (no toolkit found)"
                               : " (toolkit: " + toolkit.str() + ")");
  }
  return ptx;
}

/// Fails (reported) when the manifest launches a kernel the gpu.module does
/// not define.
static LogicalResult checkManifestKernels(const Compilation &c,
                                          ManifestAttr manifest,
                                          ArrayRef<std::string> kernels,
                                          StringRef kernelsName) {
  SmallVector<StringRef> unknown;
  for (StringRef name : getManifestKernels(manifest))
    if (!llvm::is_contained(kernels, name))
      unknown.push_back(name);
  if (unknown.empty())
    return success();
  ModuleOp module = c.module;
  InFlightDiagnostic diag = emitError(module.getLoc());
  diag << kManifestAttr << " launches kernels that gpu.module @"
       << kernelsName << " does not define:";
  for (StringRef name : unknown)
    diag << " " << name;
  return failure();
}

/// ptxas on the written PTX: the manifest's artifacts.cubins (a cubin per
/// kernel, through `cache`) when there is one, else (after writing
/// <flow>.cubin) nothing.
static FailureOr<std::optional<llvm::json::Object>>
assembleCubins(const Compilation &c, StringRef ptx, StringRef toolkit,
               const std::optional<KernelCache> &cache) {
  PTXAssemblerOptions ptxas{chipName(c.options), c.options.optLevel,
                            toolkit.str()};
  TimingScope ptxasTime = c.timing.nest("ptxas");
  if (cache) {
    FailureOr<std::optional<llvm::json::Object>> byKernel =
        assemblePTXByKernel(ptx, ptxas, *cache, c.options.outputDir,
                            c.driverLoc);
    if (failed(byKernel) || *byKernel)
      return byKernel;
  }
  if (failed(assemblePTXFile(c.outPath(".ptx"), c.outPath(".cubin"), ptxas,
                             c.driverLoc)))
    return failure();
  return std::optional<llvm::json::Object>();
}

LogicalResult driver::compileGPU(Compilation &c) {
  VortexNVVMPipelineOptions options;
  if (failed(gpuPipelineOptions(c, options)))
    return failure();
  std::string toolkit = findCUDAToolkit(c.options.cudaPath);

  // A hand-written manifest is judged before the pipeline reads it.
  if (failed(getManifestAttr(c.module, c.flow)))
    return failure();
  FailureOr<std::optional<uint64_t>> cacheLimit = parseKernelCacheLimit(c);
  if (failed(cacheLimit))
    return failure();
  // Without a cache of the user's, the library kernels are read, nothing
  // kept.
  std::string error;
  FailureOr<std::optional<KernelCache>> opened = KernelCache::openForCompile(
      c.options.kernelCache, options.prebuiltKernels, error);
  if (failed(opened))
    return emitError(c.driverLoc) << "--kernel-cache: " << error;
  std::optional<KernelCache> cache = std::move(*opened);

  // Stage 1: kernels to the NVVM dialect.
  if (failed(c.runStage("lower to NVVM", [&](OpPassManager &pm) {
        buildVortexNVVMLowerStage(pm, options);
      })))
    return failure();

  SmallVector<std::string> kernels;
  FailureOr<gpu::GPUModuleOp> gpuModule = kernelsOf(c.module, kernels);
  if (failed(gpuModule))
    return failure();
  // The gpu.module becomes a gpu.binary when serialized: keep what we need.
  Location kernelsLoc = gpuModule->getLoc();
  std::string kernelsName = gpuModule->getName().str();

  // The manifest, and the flow name the files are named after.
  c.flow = kernelsName;
  FailureOr<ManifestAttr> manifest = getManifestAttr(c.module, c.flow);
  if (failed(manifest))
    return failure();
  if (*manifest &&
      failed(checkManifestKernels(c, *manifest, kernels, kernelsName)))
    return failure();

  // Convert before anything is written, so a bad manifest leaves no files.
  llvm::json::Object json;
  if (*manifest) {
    FailureOr<llvm::json::Object> value =
        manifestToJSON(*manifest, c.module.getLoc());
    if (failed(value))
      return failure();
    json = std::move(*value);
  }

  if (failed(c.createOutputDir()))
    return failure();
  if (c.options.dumpIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    c.module->print(os);
    if (failed(c.writeOutput(".nvvm.mlir", text)))
      return failure();
  }

  // Stage 2: serialize (links libdevice from the toolkit).
  if (failed(c.runStage("LLVM to PTX", [&](OpPassManager &pm) {
        buildVortexNVVMBinaryStage(pm, options);
      })))
    return failure();

  FailureOr<StringRef> ptx = ptxOf(c.module, toolkit);
  if (failed(ptx) || failed(c.writeOutput(".ptx", *ptx)))
    return failure();
  std::optional<llvm::json::Object> kernelCubins;
  if (c.options.cubin) {
    FailureOr<std::optional<llvm::json::Object>> cubins =
        assembleCubins(c, *ptx, toolkit, cache);
    if (failed(cubins))
      return failure();
    kernelCubins = std::move(*cubins);
  }

  if (!*manifest) {
    emitWarning(kernelsLoc)
        << "no " << kManifestAttr
        << " attribute: the manifest lists only the kernels of gpu.module @"
        << kernelsName;
    llvm::json::Array names;
    for (const std::string &kernel : kernels)
      names.push_back(kernel);
    json["kernels"] = std::move(names);
  }
  llvm::json::Object artifacts;
  artifacts["ptx"] = llvm::sys::path::filename(c.outPath(".ptx")).str();
  if (kernelCubins)
    artifacts["cubins"] = std::move(*kernelCubins);
  else if (c.options.cubin)
    artifacts["cubin"] = llvm::sys::path::filename(c.outPath(".cubin")).str();
  if (failed(writeManifestJSON(c.outPath(".manifest.json"), std::move(json),
                               c.flow, chipName(c.options),
                               std::move(artifacts), c.driverLoc)))
    return failure();
  // Last, so that this compile's entries are the most recently used.
  if (cache && cacheLimit->has_value())
    cache->trim(**cacheLimit);
  return success();
}
