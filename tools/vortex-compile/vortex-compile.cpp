//===- vortex-compile.cpp - Compile a flow to PTX, cubin and manifest -----===//
//
// vortex-compile <flow.mlir> -o <outdir> [--chip=sm_90] [--features=...]
//                [--opt-level=3] [--cuda-path=...] [--dump-ir] [--no-cubin]
//
// Runs vortex-to-nvvm (PTX in a gpu.binary), writes <outdir>/<flow>.ptx,
// assembles it with ptxas into <outdir>/<flow>.cubin and writes
// <outdir>/<flow>.manifest.json from the module attribute `vortex.manifest`
// (docs/gpu.md). The GPU machine has no MLIR: these files are all it gets.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Pipelines/Pipelines.h"
#include "Vortex/Registration.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
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
static cl::opt<std::string> chip("chip",
                                 cl::desc("GPU architecture (default sm_90)"),
                                 cl::init("sm_90"), cl::cat(category));
static cl::opt<std::string>
    features("features",
             cl::desc("NVPTX features, e.g. +ptx80 (default: the PTX ISA the "
                      "chip needs, at least 8.0)"),
             cl::init(""), cl::cat(category));
static cl::opt<unsigned> optLevel("opt-level",
                                  cl::desc("LLVM and ptxas optimization level"),
                                  cl::init(3), cl::cat(category));
static cl::opt<std::string>
    cudaPath("cuda-path",
             cl::desc("CUDA toolkit (libdevice, ptxas); default: $CUDA_HOME, "
                      "$CUDA_ROOT, $CUDA_PATH, else /usr/local/cuda"),
             cl::init(""), cl::cat(category));
static cl::opt<bool>
    dumpIR("dump-ir",
           cl::desc("Also write <outdir>/<flow>.nvvm.mlir, the kernels in the "
                    "NVVM dialect right before serialization"),
           cl::init(false), cl::cat(category));
static cl::opt<bool> noCubin("no-cubin",
                             cl::desc("Do not run ptxas (the manifest then "
                                      "has no \"cubin\")"),
                             cl::init(false), cl::cat(category));

static constexpr llvm::StringLiteral kManifestAttr = "vortex.manifest";
static constexpr int64_t kManifestVersion = 1;

/// Errors that are not about a place in the input.
static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "vortex-compile") << message << "\n";
  return 1;
}

/// JSON strings must be UTF-8; MLIR string attributes need not be.
static std::string toUTF8(StringRef s) {
  return llvm::json::isUTF8(s) ? s.str() : llvm::json::fixUTF8(s);
}

template <typename T>
static llvm::json::Value numberArray(ArrayRef<T> values) {
  llvm::json::Array array;
  for (T v : values)
    array.push_back(v);
  return llvm::json::Value(std::move(array));
}

/// The manifest attribute as JSON: dictionaries, arrays (and dense arrays),
/// strings, integers, floats, booleans and unit attributes (true).
static FailureOr<llvm::json::Value> toJSON(Attribute attr, Location loc,
                                           const std::string &path) {
  auto unsupported = [&]() -> FailureOr<llvm::json::Value> {
    emitError(loc) << kManifestAttr << ": cannot convert " << attr
                   << " at '" << path << "' to JSON";
    return failure();
  };
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute entry : dict) {
      std::string key = toUTF8(entry.getName().getValue());
      FailureOr<llvm::json::Value> value =
          toJSON(entry.getValue(), loc, path + "." + key);
      if (failed(value))
        return failure();
      object[key] = std::move(*value);
    }
    return llvm::json::Value(std::move(object));
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (auto [i, element] : llvm::enumerate(array)) {
      FailureOr<llvm::json::Value> value =
          toJSON(element, loc, path + "[" + std::to_string(i) + "]");
      if (failed(value))
        return failure();
      values.push_back(std::move(*value));
    }
    return llvm::json::Value(std::move(values));
  }
  if (auto str = dyn_cast<StringAttr>(attr))
    return llvm::json::Value(toUTF8(str.getValue()));
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return llvm::json::Value(boolean.getValue());
  if (auto integer = dyn_cast<IntegerAttr>(attr)) {
    if (!isa<IntegerType, IndexType>(integer.getType()))
      return unsupported();
    APInt value = integer.getValue();
    bool isUnsigned = integer.getType().isUnsignedInteger();
    if (isUnsigned ? !value.isIntN(63) : !value.isSignedIntN(64))
      return unsupported();
    return llvm::json::Value(isUnsigned ? int64_t(value.getZExtValue())
                                        : value.getSExtValue());
  }
  if (auto fp = dyn_cast<FloatAttr>(attr))
    return llvm::json::Value(fp.getValueAsDouble());
  if (isa<UnitAttr>(attr))
    return llvm::json::Value(true);
  if (auto dense = dyn_cast<DenseI32ArrayAttr>(attr))
    return numberArray(dense.asArrayRef());
  if (auto dense = dyn_cast<DenseI64ArrayAttr>(attr))
    return numberArray(dense.asArrayRef());
  if (auto dense = dyn_cast<DenseF32ArrayAttr>(attr))
    return numberArray(dense.asArrayRef());
  if (auto dense = dyn_cast<DenseF64ArrayAttr>(attr))
    return numberArray(dense.asArrayRef());
  return unsupported();
}

/// Kernel names the manifest's steps launch ("steps": {<step>: [{"kernel":
/// name, ...}, ...]}); anything shaped otherwise is not inspected.
static SmallVector<StringRef> manifestKernels(DictionaryAttr manifest) {
  SmallVector<StringRef> names;
  auto steps = manifest.getAs<DictionaryAttr>("steps");
  if (!steps)
    return names;
  for (NamedAttribute step : steps)
    if (auto launches = dyn_cast<ArrayAttr>(step.getValue()))
      for (Attribute launch : launches)
        if (auto dict = dyn_cast<DictionaryAttr>(launch))
          if (auto kernel = dict.getAs<StringAttr>("kernel"))
            names.push_back(kernel.getValue());
  return names;
}

static LogicalResult writeFile(StringRef path, StringRef contents) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file) {
    fail(error);
    return failure();
  }
  file->os() << contents;
  file->keep();
  return success();
}

/// ptxas from the toolkit, else from $PATH.
static std::string findPtxas(StringRef toolkit) {
  if (!toolkit.empty()) {
    SmallString<128> path(toolkit);
    llvm::sys::path::append(path, "bin", "ptxas");
    if (llvm::sys::fs::can_execute(path))
      return std::string(path);
  }
  if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName("ptxas"))
    return *path;
  return "";
}

static LogicalResult runPtxas(StringRef ptxPath, StringRef cubinPath,
                              StringRef toolkit) {
  std::string ptxas = findPtxas(toolkit);
  if (ptxas.empty()) {
    fail("ptxas not found (looked in " +
         (toolkit.empty() ? std::string("no CUDA toolkit")
                          : toolkit.str() + "/bin") +
         " and $PATH): pass --cuda-path=<CUDA toolkit>, or --no-cubin to "
         "write only the PTX");
    return failure();
  }
  SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("vortex-ptxas", "log", log)) {
    fail("cannot create a temporary file: " + ec.message());
    return failure();
  }
  llvm::scope_exit removeLog([&] { llvm::sys::fs::remove(log); });
  std::string arch = "-arch=" + chip;
  std::string opt = "-O" + std::to_string(optLevel);
  SmallVector<StringRef> args = {ptxas, arch,    opt, ptxPath,
                                 "-o",  cubinPath};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &error);
  if (rc == 0)
    return success();
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    output = (*buffer)->getBuffer().rtrim().str();
  fail(llvm::Twine(ptxas) + " " + arch + " " + opt + " " + ptxPath +
       " failed" + (rc < 0 ? ": " + error : " with exit code " +
                                                std::to_string(rc)) +
       (output.empty() ? "" : ":\n" + output));
  llvm::sys::fs::remove(cubinPath);
  return failure();
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  registerAsmPrinterCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&category, &cl::getGeneralCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "Compile the kernels of a vortex module to PTX, a cubin and a JSON "
      "manifest\n");
  vortex::registerAllVortexPasses();

  vortex::VortexNVVMPipelineOptions options;
  options.chip = chip;
  options.features = features;
  options.optLevel = optLevel;
  options.cudaPath = cudaPath;
  // PTX in the gpu.binary; the cubin comes from our own ptxas run.
  options.format = "isa";
  std::string error;
  if (failed(vortex::verifyVortexNVVMPipelineOptions(options, error)))
    return fail(error);
  std::string toolkit = vortex::findCUDAToolkit(cudaPath);

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllGPUToLLVMIRTranslations(registry);
  vortex::registerAllVortexDialects(registry);
  MLIRContext context(registry);
  // Point at the op; dumping all of it (a whole gpu.module) buries the error.
  context.printOpOnDiagnostic(false);

  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input)
    return fail(error);
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagHandler(*sourceMgr, &context);
  // Some passes (gpu-module-to-binary) report an error and still succeed.
  bool sawError = false;
  ScopedDiagnosticHandler errorTracker(&context, [&](Diagnostic &diag) {
    sawError |= diag.getSeverity() == DiagnosticSeverity::Error;
    return failure(); // Let the source manager handler print it.
  });
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return 1;
  Location moduleLoc = module->getLoc();

  // Stage 1: kernels to the NVVM dialect.
  PassManager lower(&context, ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(lower)))
    return 1;
  vortex::buildVortexNVVMLowerStage(lower, options);
  if (failed(lower.run(*module)) || sawError)
    return 1;

  auto gpuModules = llvm::to_vector(module->getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() != 1) {
    InFlightDiagnostic diag = emitError(moduleLoc);
    if (gpuModules.empty())
      diag << "no gpu.module to compile: expected the kernels of "
              "convert-vortex-to-gpu";
    else
      diag << "expected one gpu.module, found " << gpuModules.size();
    for (gpu::GPUModuleOp gpuModule : gpuModules)
      diag.attachNote(gpuModule.getLoc()) << "gpu.module here";
    return 1;
  }
  // The gpu.module becomes a gpu.binary when serialized: keep what we need.
  gpu::GPUModuleOp gpuModule = gpuModules.front();
  Location kernelsLoc = gpuModule.getLoc();
  std::string kernelsName = gpuModule.getName().str();
  SmallVector<std::string> kernels;
  for (auto func : gpuModule.getOps<LLVM::LLVMFuncOp>())
    if (func->hasAttr(gpu::GPUDialect::getKernelFuncAttrName()))
      kernels.push_back(func.getName().str());
  if (kernels.empty()) {
    emitError(gpuModule.getLoc()) << "gpu.module @" << gpuModule.getName()
                                  << " has no kernel";
    return 1;
  }

  // The manifest, and the flow name the files are named after.
  Attribute manifestAttr = (*module)->getAttr(kManifestAttr);
  auto manifest = dyn_cast_or_null<DictionaryAttr>(manifestAttr);
  if (manifestAttr && !manifest) {
    emitError(moduleLoc) << kManifestAttr << " must be a dictionary, got "
                         << manifestAttr;
    return 1;
  }
  std::string flow = gpuModule.getName().str();
  if (manifest) {
    if (Attribute flowAttr = manifest.get("flow")) {
      auto name = dyn_cast<StringAttr>(flowAttr);
      if (!name || name.getValue().empty() ||
          name.getValue().find_first_of("/\\") != StringRef::npos ||
          name.getValue() == "." || name.getValue() == "..") {
        emitError(moduleLoc) << kManifestAttr
                             << ": \"flow\" must be a file name, got "
                             << flowAttr;
        return 1;
      }
      flow = name.getValue().str();
    }
    SmallVector<StringRef> unknown;
    for (StringRef name : manifestKernels(manifest))
      if (!llvm::is_contained(kernels, name))
        unknown.push_back(name);
    if (!unknown.empty()) {
      InFlightDiagnostic diag = emitError(moduleLoc);
      diag << kManifestAttr << " launches kernels that gpu.module @"
           << gpuModule.getName() << " does not define:";
      for (StringRef name : unknown)
        diag << " " << name;
      return 1;
    }
  }

  // Convert before anything is written, so a bad manifest leaves no files.
  llvm::json::Object json;
  if (manifest) {
    FailureOr<llvm::json::Value> value = toJSON(manifest, moduleLoc, "");
    if (failed(value))
      return 1;
    json = std::move(*value->getAsObject());
  }

  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return fail("cannot create '" + outputDir + "': " + ec.message());
  auto outPath = [&](StringRef suffix) {
    SmallString<128> path(outputDir);
    llvm::sys::path::append(path, flow + suffix);
    return std::string(path);
  };

  if (dumpIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    if (failed(writeFile(outPath(".nvvm.mlir"), text)))
      return 1;
  }

  // Stage 2: serialize (links libdevice from the toolkit).
  PassManager serialize(&context, ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(serialize)))
    return 1;
  vortex::buildVortexNVVMBinaryStage(serialize, options);
  if (failed(serialize.run(*module)) || sawError)
    return 1;

  auto binaries = llvm::to_vector(module->getOps<gpu::BinaryOp>());
  if (binaries.size() != 1 || binaries.front().getObjects().size() != 1) {
    emitError(moduleLoc) << "expected one gpu.binary holding one object";
    return 1;
  }
  auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
  if (object.getFormat() != gpu::CompilationTarget::Assembly) {
    emitError(moduleLoc) << "expected PTX in the gpu.binary";
    return 1;
  }
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
    emitError(moduleLoc)
        << "the PTX calls " << callee
        << " but no libdevice was linked: pass --cuda-path=<CUDA toolkit> "
           "or set CUDA_HOME"
        << (toolkit.empty() ? " (no toolkit found)"
                            : " (toolkit: " + toolkit + ")");
    return 1;
  }

  std::string ptxPath = outPath(".ptx"), cubinPath = outPath(".cubin");
  if (failed(writeFile(ptxPath, ptx)))
    return 1;
  if (!noCubin && failed(runPtxas(ptxPath, cubinPath, toolkit)))
    return 1;

  if (!manifest) {
    emitWarning(kernelsLoc)
        << "no " << kManifestAttr
        << " attribute: the manifest lists only the kernels of gpu.module @"
        << kernelsName;
    llvm::json::Array names;
    for (const std::string &kernel : kernels)
      names.push_back(kernel);
    json["kernels"] = std::move(names);
  }
  json["version"] = kManifestVersion;
  json["flow"] = flow;
  json["chip"] = chip.getValue();
  json["ptx"] = llvm::sys::path::filename(ptxPath).str();
  if (noCubin)
    json.erase("cubin");
  else
    json["cubin"] = llvm::sys::path::filename(cubinPath).str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(json))) << "\n";
  if (failed(writeFile(outPath(".manifest.json"), text)))
    return 1;
  return 0;
}
