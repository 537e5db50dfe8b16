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
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Pipelines/Pipelines.h"
#include "Vortex/Registration.h"
#include "Vortex/Transforms/GPU/KernelCache.h"

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
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <atomic>
#include <limits>

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

static constexpr llvm::StringLiteral kManifestAttr =
    vortex::abi::kManifestAttrName;

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

/// Kernel names the manifest's steps launch ("steps": {<step>: {"kernels":
/// [{"kernel": name, ...}, ...]}}); anything shaped otherwise is not
/// inspected.
static SmallVector<StringRef> manifestKernels(DictionaryAttr manifest) {
  SmallVector<StringRef> names;
  auto steps = manifest.getAs<DictionaryAttr>(vortex::abi::kManifestSteps);
  if (!steps)
    return names;
  for (NamedAttribute step : steps)
    if (auto stepDict = dyn_cast<DictionaryAttr>(step.getValue()))
      if (auto launches =
              stepDict.getAs<ArrayAttr>(vortex::abi::kManifestKernels))
        for (Attribute launch : launches)
          if (auto dict = dyn_cast<DictionaryAttr>(launch))
            if (auto kernel =
                    dict.getAs<StringAttr>(vortex::abi::kManifestKernel))
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

static std::string chipName() { return chip.empty() ? "sm_90" : chip.getValue(); }

/// Runs a tool, its stdout and stderr together into `output` (through a
/// temporary log); the exit code, or -1 with `error` set when it could not
/// run. Safe to call from several threads.
static int runCapturing(StringRef program, ArrayRef<StringRef> args,
                        std::string &output, std::string &error) {
  SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("vortex-tool", "log", log)) {
    error = "cannot create a temporary file: " + ec.message();
    return -1;
  }
  llvm::scope_exit removeLog([&] { llvm::sys::fs::remove(log); });
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  int rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &error);
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    output = (*buffer)->getBuffer().rtrim().str();
  return rc;
}

/// Runs a tool; when it fails, `message` says so with its output. Safe to
/// call from several threads.
static LogicalResult runToolQuietly(StringRef program, ArrayRef<StringRef> args,
                                    const llvm::Twine &what,
                                    std::string &message) {
  std::string output, error;
  int rc = runCapturing(program, args, output, error);
  if (rc == 0)
    return success();
  message = (what + " failed" +
             (rc < 0 ? ": " + error : " with exit code " + std::to_string(rc)) +
             (output.empty() ? "" : ":\n" + output))
                .str();
  return failure();
}

/// runToolQuietly, its failure reported.
static LogicalResult runTool(StringRef program, ArrayRef<StringRef> args,
                             const llvm::Twine &what) {
  std::string message;
  if (succeeded(runToolQuietly(program, args, what, message)))
    return success();
  fail(message);
  return failure();
}

/// ptxas, or a reported failure naming where it was looked for.
static FailureOr<std::string> requirePtxas(StringRef toolkit) {
  std::string ptxas = findPtxas(toolkit);
  if (!ptxas.empty())
    return ptxas;
  fail("ptxas not found (looked in " +
       (toolkit.empty() ? std::string("no CUDA toolkit")
                        : toolkit.str() + "/bin") +
       " and $PATH): install the CUDA toolkit and pass "
       "--cuda-path=<toolkit> (or set CUDA_HOME), or pass --no-cubin to "
       "write only the PTX");
  return failure();
}

static LogicalResult runPtxas(StringRef ptxPath, StringRef cubinPath,
                              StringRef toolkit) {
  FailureOr<std::string> found = requirePtxas(toolkit);
  if (failed(found))
    return failure();
  std::string ptxas = *found;
  std::string arch = "-arch=" + chipName();
  std::string opt = "-O" + std::to_string(optLevel);
  // --split-compile=0: ptxas compiles the kernels on all cores (the same
  // SASS as one thread, checked section by section).
  SmallVector<StringRef> args = {ptxas,   arch, opt, "--split-compile=0",
                                 ptxPath, "-o", cubinPath};
  // A failure names the command as run, up to its output file.
  if (succeeded(runTool(ptxas, args,
                        llvm::join(ArrayRef(args).drop_back(2), " "))))
    return success();
  llvm::sys::fs::remove(cubinPath);
  return failure();
}

/// What ptxas is, for the cubins' keys: the file found (a wrapper script
/// too) and what it says its version is.
static std::string ptxasIdentity(StringRef ptxas) {
  std::string identity = vortex::KernelCache::fileIdentity(ptxas);
  std::string version, error;
  StringRef args[] = {ptxas, "--version"};
  if (runCapturing(ptxas, args, version, error) == 0)
    identity += "\n" + version;
  return identity;
}

/// ptxas on one kernel's PTX (`name` names the kernel in messages and
/// temporary files): the cubin's bytes.
static FailureOr<std::string> assemblePTX(StringRef ptx, StringRef name,
                                          StringRef ptxas,
                                          ArrayRef<StringRef> flags,
                                          std::string &message) {
  SmallString<128> ptxPath, cubinPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "vortex-" + name, "ptx", ptxPath)) {
    message = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  llvm::scope_exit removePtx([&] { llvm::sys::fs::remove(ptxPath); });
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "vortex-" + name, "cubin", cubinPath)) {
    message = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  llvm::scope_exit removeCubin([&] { llvm::sys::fs::remove(cubinPath); });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    if (!ec) {
      os << ptx;
      os.close();
    }
    if (ec || os.has_error()) {
      os.clear_error();
      message = ("cannot write '" + ptxPath + "'").str();
      return failure();
    }
  }
  SmallVector<StringRef> args = {ptxas};
  llvm::append_range(args, flags);
  args.append({ptxPath, "-o", cubinPath});
  std::string what = llvm::join(ArrayRef(args).drop_back(3), " ") +
                     " (kernel @" + name.str() + ")";
  if (failed(runToolQuietly(ptxas, args, what, message)))
    return failure();
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!cubin) {
    message = ("ptxas left no cubin for @" + name).str();
    return failure();
  }
  return (*cubin)->getBuffer().str();
}

/// One kernel's cubin, from the cache when it holds the kernel's PTX
/// assembled the same way, else from ptxas (and stored). The entry is the
/// kernel assembled under the cache's kernel name, so that every flow with
/// the same kernel shares it; the kernel's own name is written into the
/// copy returned (vortex::renameCubinKernel). An entry it cannot be written
/// into is replaced. A kernel that cannot go under the cache's name (a
/// longer name, PTX that would not map back, a cubin the name cannot be
/// written into) is assembled and kept under its own, and found there
/// before ptxas runs again; a ptxas failure is reported from a run under
/// the kernel's own name, so that its messages name the kernel.
static FailureOr<std::string>
assembleKernel(const vortex::PTXKernel &kernel, StringRef ptxas,
               StringRef identity, ArrayRef<StringRef> flags,
               const vortex::KernelCache &cache,
               std::atomic<int> &storeFailures, std::string &message) {
  auto keyOf = [&](StringRef ptx) {
    SmallVector<StringRef> parts = {"ptxas", identity};
    llvm::append_range(parts, flags);
    parts.push_back(ptx);
    return vortex::KernelCache::key(parts);
  };
  StringRef cached = vortex::cachedKernelName();
  std::string shared;
  if (kernel.name.size() <= cached.size() &&
      !StringRef(kernel.ptx).contains(cached)) {
    shared = vortex::renameKernelInPTX(kernel.ptx, kernel.name, cached);
    if (shared == kernel.ptx ||
        vortex::renameKernelInPTX(shared, cached, kernel.name) != kernel.ptx)
      shared.clear();
  }
  std::string sharedKey = shared.empty() ? "" : keyOf(shared);
  if (!shared.empty())
    if (std::optional<std::string> hit = cache.lookup(sharedKey, "cubin"))
      if (std::optional<std::string> named =
              vortex::renameCubinKernel(*hit, kernel.name)) {
        cache.markUsed(sharedKey, "cubin");
        return *named;
      }
  std::string ownKey = keyOf(kernel.ptx);
  if (std::optional<std::string> hit = cache.lookup(ownKey, "cubin"))
    if (StringRef(*hit).starts_with("\x7f" "ELF")) {
      cache.markUsed(ownKey, "cubin");
      return *hit;
    }
  if (!shared.empty()) {
    std::string ignored;
    FailureOr<std::string> cubin =
        assemblePTX(shared, kernel.name, ptxas, flags, ignored);
    if (succeeded(cubin))
      if (std::optional<std::string> named =
              vortex::renameCubinKernel(*cubin, kernel.name)) {
        if (!cache.store(sharedKey, "cubin", *cubin))
          ++storeFailures;
        return *named;
      }
  }
  FailureOr<std::string> cubin =
      assemblePTX(kernel.ptx, kernel.name, ptxas, flags, message);
  if (succeeded(cubin) && !cache.store(ownKey, "cubin", *cubin))
    ++storeFailures;
  return cubin;
}

/// --kernel-cache: a cubin per kernel, <outdir>/<kernel>.cubin, each from
/// the cache or its own ptxas run (in parallel), as `artifacts.cubins`.
/// Nothing is written when one fails. Nothing is returned (assemble the
/// module whole) when the PTX holds more than kernels at module scope.
static FailureOr<std::optional<llvm::json::Object>>
assembleByKernel(StringRef ptx, StringRef toolkit,
                 const vortex::KernelCache &cache, StringRef outDir) {
  std::optional<SmallVector<vortex::PTXKernel>> kernels =
      vortex::splitPTXByKernel(ptx);
  if (!kernels)
    return std::optional<llvm::json::Object>();
  FailureOr<std::string> ptxas = requirePtxas(toolkit);
  if (failed(ptxas))
    return failure();
  std::string arch = "-arch=" + chipName();
  std::string opt = "-O" + std::to_string(optLevel);
  SmallVector<StringRef> flags = {arch, opt};
  std::string identity = ptxasIdentity(*ptxas);
  SmallVector<std::string> cubins(kernels->size()), messages(kernels->size());
  SmallVector<char> ok(kernels->size(), 0);
  std::atomic<int> storeFailures = 0;
  llvm::parallelFor(0, kernels->size(), [&](size_t i) {
    FailureOr<std::string> cubin =
        assembleKernel((*kernels)[i], *ptxas, identity, flags, cache,
                       storeFailures, messages[i]);
    if (succeeded(cubin)) {
      cubins[i] = std::move(*cubin);
      ok[i] = 1;
    }
  });
  bool allOk = true;
  for (auto [i, good] : llvm::enumerate(ok))
    if (!good) {
      fail(messages[i]);
      allOk = false;
    }
  if (!allOk)
    return failure();
  if (storeFailures > 0)
    llvm::WithColor::warning(llvm::errs(), "vortex-compile")
        << storeFailures << " cubin(s) could not be stored in the kernel "
        << "cache '" << cache.directory() << "'\n";
  llvm::json::Object files;
  SmallVector<std::string> written;
  for (auto [kernel, cubin] : llvm::zip(*kernels, cubins)) {
    std::string name = kernel.name + ".cubin";
    SmallString<128> path(outDir);
    llvm::sys::path::append(path, name);
    if (failed(writeFile(path, cubin))) {
      for (const std::string &done : written)
        llvm::sys::fs::remove(done);
      return failure();
    }
    written.push_back(std::string(path));
    files[kernel.name] = name;
  }
  return std::optional<llvm::json::Object>(std::move(files));
}

namespace {
/// What both targets share: the module being compiled, whether a diagnostic
/// reported an error, and where the outputs go.
struct Compilation {
  ModuleOp module;
  bool &sawError;
  /// `--mlir-timing`: every stage of the compile nests its timer here (MLIR's
  /// passes, LLVM's code generation in the serializing pass, ptxas, the
  /// host linker); without it the scope times nothing.
  TimingScope &timing;
  /// The file stem of every output: the manifest's "flow".
  std::string flow;

  std::string outPath(StringRef suffix) const {
    SmallString<128> path(outputDir);
    llvm::sys::path::append(path, flow + suffix);
    return std::string(path);
  }
};
} // namespace

/// The module's manifest attribute: null if absent, failure if malformed.
/// Names the outputs after its "flow" when it has one.
static FailureOr<DictionaryAttr> getManifest(Compilation &c) {
  Location loc = c.module.getLoc();
  Attribute attr = c.module->getAttr(kManifestAttr);
  auto manifest = dyn_cast_or_null<DictionaryAttr>(attr);
  if (attr && !manifest) {
    emitError(loc) << kManifestAttr << " must be a dictionary, got " << attr;
    return failure();
  }
  if (!manifest)
    return manifest;
  // A hand-written module may carry a manifest of another version.
  if (Attribute version = manifest.get("version")) {
    auto v = dyn_cast<IntegerAttr>(version);
    if (!v || v.getInt() != vortex::abi::kManifestVersion) {
      emitError(loc) << kManifestAttr << ": version " << version
                     << " is not the version this tool writes ("
                     << vortex::abi::kManifestVersion << ")";
      return failure();
    }
  }
  if (auto steps =
          manifest.getAs<DictionaryAttr>(vortex::abi::kManifestSteps)) {
    for (NamedAttribute step : steps) {
      auto dict = dyn_cast<DictionaryAttr>(step.getValue());
      if (!dict || !dict.getAs<ArrayAttr>(vortex::abi::kManifestArgs) ||
          !dict.getAs<ArrayAttr>(vortex::abi::kManifestWrites) ||
          !dict.getAs<ArrayAttr>(vortex::abi::kManifestKernels)) {
        emitError(loc) << kManifestAttr << ": step " << step.getName()
                       << " must be {args, writes, kernels}";
        return failure();
      }
    }
  }
  if (Attribute flowAttr = manifest.get("flow")) {
    auto name = dyn_cast<StringAttr>(flowAttr);
    if (!name || name.getValue().empty() ||
        name.getValue().find_first_of("/\\") != StringRef::npos ||
        name.getValue() == "." || name.getValue() == "..") {
      emitError(loc) << kManifestAttr << ": \"flow\" must be a file name, got "
                     << flowAttr;
      return failure();
    }
    c.flow = name.getValue().str();
  }
  return manifest;
}

static LogicalResult createOutputDir() {
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
    fail("cannot create '" + outputDir + "': " + ec.message());
    return failure();
  }
  return success();
}

/// Adds what the tool knows (version, target, artifacts) and writes
/// <flow>.manifest.json, keys sorted.
static LogicalResult writeManifest(const Compilation &c,
                                   llvm::json::Object json, StringRef target,
                                   llvm::json::Object artifacts) {
  json["version"] = vortex::abi::kManifestVersion;
  json["flow"] = c.flow;
  json["target"] = target.str();
  json["artifacts"] = std::move(artifacts);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(json))) << "\n";
  return writeFile(c.outPath(".manifest.json"), text);
}

/// Runs the passes `build` adds on the module, timed as the compile's stage
/// `stage` (--mlir-timing). Fails on a pass failure or an error diagnostic
/// (some passes report one and still succeed).
static LogicalResult runStage(MLIRContext &context, Compilation &c,
                              StringRef stage,
                              function_ref<void(OpPassManager &)> build) {
  PassManager pm(&context, ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  TimingScope time = c.timing.nest(stage);
  pm.enableTiming(time);
  build(pm);
  return failure(failed(pm.run(c.module)) || c.sawError);
}

/// Whether a prebuilt-kernels setting names no directory ("none" or empty).
static bool isNoDirectory(StringRef setting) {
  return setting.empty() || setting == "none";
}

/// Whether --prebuilt-kernels names a directory.
static bool prebuiltKernelsNamed() {
  return prebuiltKernels.getNumOccurrences() &&
         !isNoDirectory(prebuiltKernels);
}

/// argv[0], for the prebuilt kernels' default directory.
static const char *toolArgv0 = "vortex-compile";

/// The directory of prebuilt kernels (empty: none): --prebuilt-kernels,
/// else $VORTEX_PREBUILT_KERNELS, else the one installed beside this tool
/// (<bindir>/../share/vortex/kernels) if it exists. One named explicitly
/// must exist. Read with or without --kernel-cache, never written.
static LogicalResult resolvePrebuiltKernels(std::string &dir) {
  dir.clear();
  if (prebuiltKernelsNamed()) {
    if (!llvm::sys::fs::is_directory(prebuiltKernels)) {
      fail("--prebuilt-kernels: '" + prebuiltKernels + "' is not a directory");
      return failure();
    }
    dir = prebuiltKernels;
    return success();
  }
  if (prebuiltKernels.getNumOccurrences())
    return success();
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("VORTEX_PREBUILT_KERNELS")) {
    if (!isNoDirectory(*env) && llvm::sys::fs::is_directory(*env))
      dir = *env;
    return success();
  }
  std::string exe = llvm::sys::fs::getMainExecutable(
      toolArgv0, reinterpret_cast<void *>(&resolvePrebuiltKernels));
  SmallString<256> installed(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(installed, "..", "share", "vortex", "kernels");
  llvm::sys::path::remove_dots(installed, /*remove_dot_dot=*/true);
  if (!exe.empty() && llvm::sys::fs::is_directory(installed))
    dir = std::string(installed);
  return success();
}

/// The NVVM pipeline's options from the command line, checked.
static LogicalResult
gpuPipelineOptions(vortex::VortexNVVMPipelineOptions &options) {
  options.chip = chipName();
  options.features = features;
  if (llvmOptLevel > 3 || llvmOptLevel < -1) {
    fail("--llvm-opt-level must be 0, 1, 2 or 3, got " +
         std::to_string(llvmOptLevel));
    return failure();
  }
  options.optLevel = llvmOptLevel < 0 ? optLevel.getValue()
                                      : static_cast<unsigned>(llvmOptLevel);
  options.cudaPath = cudaPath;
  // PTX in the gpu.binary; the cubin comes from our own ptxas run.
  options.format = "isa";
  options.chainLaunches = !noChainLaunches;
  options.toGPU = toGPU;
  options.kernelCache = kernelCache;
  if (failed(resolvePrebuiltKernels(options.prebuiltKernels)))
    return failure();
  std::string error;
  if (failed(vortex::verifyVortexNVVMPipelineOptions(options, error))) {
    fail(error);
    return failure();
  }
  return success();
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
  if (kernels.empty()) {
    emitError(gpuModule.getLoc()) << "gpu.module @" << gpuModule.getName()
                                  << " has no kernel";
    return failure();
  }
  return gpuModule;
}

/// The PTX in the module's one gpu.binary (stage 2's output), if it calls
/// no unlinked libdevice function.
static FailureOr<StringRef> ptxOf(ModuleOp module, StringRef toolkit) {
  Location moduleLoc = module.getLoc();
  auto binaries = llvm::to_vector(module.getOps<gpu::BinaryOp>());
  if (binaries.size() != 1 || binaries.front().getObjects().size() != 1) {
    emitError(moduleLoc) << "expected one gpu.binary holding one object";
    return failure();
  }
  auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
  if (object.getFormat() != gpu::CompilationTarget::Assembly) {
    emitError(moduleLoc) << "expected PTX in the gpu.binary";
    return failure();
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
                            : " (toolkit: " + toolkit.str() + ")");
    return failure();
  }
  return ptx;
}

/// --kernel-cache-limit in bytes: nothing without one, failure (reported)
/// when it is not a size or comes without --kernel-cache.
static FailureOr<std::optional<uint64_t>> parseKernelCacheLimit() {
  StringRef text = StringRef(kernelCacheLimit).trim();
  if (text.empty())
    return std::optional<uint64_t>();
  if (kernelCache.empty()) {
    fail("--kernel-cache-limit needs --kernel-cache");
    return failure();
  }
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
      (shift && value > (std::numeric_limits<uint64_t>::max() >> shift))) {
    fail("--kernel-cache-limit: '" + kernelCacheLimit +
         "' is not a size (bytes, or a number with K, M or G)");
    return failure();
  }
  return std::optional<uint64_t>(value << shift);
}

static int compileGPU(MLIRContext &context, Compilation &c) {
  vortex::VortexNVVMPipelineOptions options;
  if (failed(gpuPipelineOptions(options)))
    return 1;
  std::string toolkit = vortex::findCUDAToolkit(cudaPath);
  Location moduleLoc = c.module.getLoc();

  // A hand-written manifest is judged before the pipeline reads it.
  if (failed(getManifest(c)))
    return 1;
  FailureOr<std::optional<uint64_t>> cacheLimit = parseKernelCacheLimit();
  if (failed(cacheLimit))
    return 1;
  // Without a cache of the user's, the library kernels are read, nothing
  // kept.
  std::string error;
  FailureOr<std::optional<vortex::KernelCache>> opened =
      vortex::KernelCache::openForCompile(kernelCache,
                                          options.prebuiltKernels, error);
  if (failed(opened))
    return fail("--kernel-cache: " + error);
  std::optional<vortex::KernelCache> cache = std::move(*opened);

  // Stage 1: kernels to the NVVM dialect.
  if (failed(runStage(context, c, "lower to NVVM", [&](OpPassManager &pm) {
        vortex::buildVortexNVVMLowerStage(pm, options);
      })))
    return 1;

  SmallVector<std::string> kernels;
  FailureOr<gpu::GPUModuleOp> gpuModule = kernelsOf(c.module, kernels);
  if (failed(gpuModule))
    return 1;
  // The gpu.module becomes a gpu.binary when serialized: keep what we need.
  Location kernelsLoc = gpuModule->getLoc();
  std::string kernelsName = gpuModule->getName().str();

  // The manifest, and the flow name the files are named after.
  c.flow = kernelsName;
  FailureOr<DictionaryAttr> manifest = getManifest(c);
  if (failed(manifest))
    return 1;
  if (*manifest) {
    SmallVector<StringRef> unknown;
    for (StringRef name : manifestKernels(*manifest))
      if (!llvm::is_contained(kernels, name))
        unknown.push_back(name);
    if (!unknown.empty()) {
      InFlightDiagnostic diag = emitError(moduleLoc);
      diag << kManifestAttr << " launches kernels that gpu.module @"
           << kernelsName << " does not define:";
      for (StringRef name : unknown)
        diag << " " << name;
      return 1;
    }
  }

  // Convert before anything is written, so a bad manifest leaves no files.
  llvm::json::Object json;
  if (*manifest) {
    FailureOr<llvm::json::Value> value = toJSON(*manifest, moduleLoc, "");
    if (failed(value))
      return 1;
    json = std::move(*value->getAsObject());
  }

  if (failed(createOutputDir()))
    return 1;
  if (dumpIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    c.module->print(os);
    if (failed(writeFile(c.outPath(".nvvm.mlir"), text)))
      return 1;
  }

  // Stage 2: serialize (links libdevice from the toolkit).
  if (failed(runStage(context, c, "LLVM to PTX", [&](OpPassManager &pm) {
        vortex::buildVortexNVVMBinaryStage(pm, options);
      })))
    return 1;

  FailureOr<StringRef> ptx = ptxOf(c.module, toolkit);
  if (failed(ptx))
    return 1;
  std::string ptxPath = c.outPath(".ptx"), cubinPath = c.outPath(".cubin");
  if (failed(writeFile(ptxPath, *ptx)))
    return 1;
  std::optional<llvm::json::Object> kernelCubins;
  if (!noCubin) {
    TimingScope ptxasTime = c.timing.nest("ptxas");
    if (cache) {
      FailureOr<std::optional<llvm::json::Object>> byKernel =
          assembleByKernel(*ptx, toolkit, *cache, outputDir);
      if (failed(byKernel))
        return 1;
      kernelCubins = std::move(*byKernel);
    }
    if (!kernelCubins && failed(runPtxas(ptxPath, cubinPath, toolkit)))
      return 1;
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
  artifacts["ptx"] = llvm::sys::path::filename(ptxPath).str();
  if (kernelCubins)
    artifacts["cubins"] = std::move(*kernelCubins);
  else if (!noCubin)
    artifacts["cubin"] = llvm::sys::path::filename(cubinPath).str();
  if (failed(writeManifest(c, std::move(json), chipName(),
                           std::move(artifacts))))
    return 1;
  // Last, so that this compile's entries are the most recently used.
  if (cache && cacheLimit->has_value())
    cache->trim(**cacheLimit);
  return 0;
}

/// The C compiler that links the shared object: $CC, else gcc, cc, clang.
static std::string findLinker() {
  if (const char *cc = std::getenv("CC"); cc && *cc) {
    if (llvm::sys::fs::can_execute(cc))
      return cc;
    if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(cc))
      return *path;
    return "";
  }
  for (StringRef name : {"gcc", "cc", "clang"})
    if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name))
      return *path;
  return "";
}

/// MLIR's C runner utils: a `memref.copy` between non-contiguous layouts
/// lowers to a call to `memrefCopy` there.
static std::string findRunnerUtils() {
  if (const char *env = std::getenv("VORTEX_MLIR_RUNTIME_LIB"); env && *env)
    return env;
  return VORTEX_MLIR_RUNNER_UTILS;
}

/// Emits `llvmModule` as an object file for the host at `path`.
static LogicalResult emitHostObject(llvm::Module &llvmModule, StringRef path) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    fail("no LLVM target for " + triple.str() + ": " + error);
    return failure();
  }
  // A generic CPU: the object may run on another machine of the same kind.
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Default));
  llvmModule.setDataLayout(machine->createDataLayout());
  llvmModule.setTargetTriple(triple);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    fail("cannot write '" + path + "': " + ec.message());
    return failure();
  }
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    fail("the LLVM target for " + triple.str() + " cannot emit objects");
    return failure();
  }
  codegen.run(llvmModule);
  return success();
}

static int compileCPU(MLIRContext &context, Compilation &c) {
  auto flows = llvm::to_vector(c.module.getOps<vortex::FlowOp>());
  if (flows.size() != 1) {
    InFlightDiagnostic diag = emitError(c.module.getLoc());
    if (flows.empty())
      diag << "no vortex.flow to compile for the CPU";
    else
      diag << "expected one vortex.flow (the manifest describes one), found "
           << flows.size();
    for (vortex::FlowOp flow : flows)
      diag.attachNote(flow.getLoc()) << "vortex.flow here";
    return 1;
  }
  c.flow = flows.front().getSymName().str();
  std::string linker = findLinker();
  if (linker.empty())
    return fail("no C compiler to link the shared object (set CC)");

  if (failed(runStage(context, c, "lower to LLVM", [](OpPassManager &pm) {
        vortex::buildVortexToCPUPipeline(pm);
      })))
    return 1;
  FailureOr<DictionaryAttr> manifest = getManifest(c);
  if (failed(manifest))
    return 1;
  if (!*manifest) {
    emitError(c.module.getLoc()) << "vortex-to-cpu left no " << kManifestAttr;
    return 1;
  }
  FailureOr<llvm::json::Value> json =
      toJSON(*manifest, c.module.getLoc(), "");
  if (failed(json))
    return 1;

  // The argument names are for readers of the IR; LLVM IR has no place for
  // them (the manifest carries the argument order).
  c.module.walk([](LLVM::LLVMFuncOp func) {
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      func.removeArgAttr(i, "vortex.name");
  });
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(c.module, llvmContext, c.flow);
  if (!llvmModule)
    return 1;
  if (failed(createOutputDir()))
    return 1;
  if (dumpIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    if (failed(writeFile(c.outPath(".ll"), text)))
      return 1;
  }
  SmallString<128> object;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "vortex-" + c.flow, "o", object))
    return fail("cannot create a temporary file: " + ec.message());
  llvm::scope_exit removeObject([&] { llvm::sys::fs::remove(object); });
  TimingScope objectTime = c.timing.nest("LLVM to object");
  if (failed(emitHostObject(*llvmModule, object)))
    return 1;
  objectTime.stop();

  std::string library = "lib" + c.flow + ".so";
  SmallString<128> libraryPath(outputDir);
  llvm::sys::path::append(libraryPath, library);
  SmallVector<std::string> args = {linker, "-shared", object.str().str(), "-o",
                                   libraryPath.str().str(), "-lm"};
  if (llvmModule->getFunction("memrefCopy")) {
    std::string utils = findRunnerUtils();
    if (!llvm::sys::fs::exists(utils))
      return fail("the flow calls MLIR's memrefCopy, but " + utils +
                  " does not exist: set VORTEX_MLIR_RUNTIME_LIB");
    args.push_back(utils);
    args.push_back("-Wl,-rpath," +
                   llvm::sys::path::parent_path(utils).str());
  }
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  TimingScope linkTime = c.timing.nest("link");
  if (failed(runTool(linker, argRefs, linker + " -shared (linking " +
                                          library + ")")))
    return 1;
  linkTime.stop();

  llvm::json::Object artifacts;
  artifacts["library"] = library;
  return failed(writeManifest(c, std::move(*json->getAsObject()), "cpu",
                              std::move(artifacts)));
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  toolArgv0 = argv[0];
  registerAsmPrinterCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // Only our options in --help; LLVM's and MLIR's stay usable (--help-hidden).
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Compile a vortex flow for the CPU (a shared object) or a GPU (PTX, a "
      "cubin), with its JSON manifest\n");
  vortex::registerAllVortexPasses();
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

  bool cpu = target == "cpu";
  if (!target.empty() && !cpu) {
    if (!chip.empty() && chip != target)
      return fail("--target=" + target + " and --chip=" + chip + " disagree");
    chip = target.getValue();
  }
  if (cpu && !chip.empty())
    return fail("--chip=" + chip + " is for GPU targets, not --target=cpu");
  if (cpu && prebuiltKernelsNamed())
    return fail("--prebuilt-kernels is for GPU targets, not --target=cpu");
  if (cpu && (!kernelCache.empty() || !kernelCacheLimit.empty()))
    return fail(std::string(kernelCache.empty() ? "--kernel-cache-limit"
                                                : "--kernel-cache") +
                " is for GPU targets, not --target=cpu");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerAllGPUToLLVMIRTranslations(registry);
  vortex::registerAllVortexDialects(registry);
  MLIRContext context(registry);
  // --mlir-timing: the whole compile, from parsing to the last file, in
  // one report (printed when `timing` goes out of scope).
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope total = timing.getRootScope();
  TimingScope parseTime = total.nest("parse");
  // Point at the op; dumping all of it (a whole gpu.module) buries the error.
  context.printOpOnDiagnostic(false);

  std::string error;
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
  parseTime.stop();
  // --flow keeps one flow of several.
  auto flows = llvm::to_vector(module->getOps<vortex::FlowOp>());
  if (!flowName.empty()) {
    auto it = llvm::find_if(flows, [](vortex::FlowOp f) {
      return f.getSymName() == flowName;
    });
    if (it == flows.end()) {
      InFlightDiagnostic diag = emitError(module->getLoc())
                                << "no vortex.flow @" << flowName;
      for (vortex::FlowOp f : flows)
        diag.attachNote(f.getLoc()) << "vortex.flow @" << f.getSymName();
      return 1;
    }
    for (vortex::FlowOp f : flows)
      if (f != *it)
        f.erase();
  } else if (flows.size() > 1) {
    InFlightDiagnostic diag = emitError(module->getLoc())
                              << "the module holds " << flows.size()
                              << " flows; pick one with --flow=<name>:";
    for (vortex::FlowOp f : flows)
      diag << " @" << f.getSymName();
    return 1;
  }
  Compilation c{*module, sawError, total, ""};
  return cpu ? compileCPU(context, c) : compileGPU(context, c);
}
