//===- PTXAssembler.cpp - ptxas: PTX to cubins, whole or by kernel --------===//

#include "Vortex/Target/PTXAssembler.h"
#include "Vortex/Target/Support.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>

using namespace mlir;
using namespace mlir::vortex;

std::string vortex::findPtxas(StringRef toolkit) {
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

FailureOr<std::string> vortex::requirePtxas(StringRef toolkit, Location loc) {
  std::string ptxas = findPtxas(toolkit);
  if (!ptxas.empty())
    return ptxas;
  return emitError(loc)
         << "ptxas not found (looked in "
         << (toolkit.empty() ? std::string("no CUDA toolkit")
                             : toolkit.str() + "/bin")
         << " and $PATH): install the CUDA toolkit and pass "
            "--cuda-path=<toolkit> (or set CUDA_HOME), or pass --no-cubin to "
            "write only the PTX";
}

LogicalResult vortex::assemblePTXFile(StringRef ptxPath, StringRef cubinPath,
                                      const PTXAssemblerOptions &options,
                                      Location loc) {
  FailureOr<std::string> ptxas = requirePtxas(options.toolkit, loc);
  if (failed(ptxas))
    return failure();
  std::string arch = "-arch=" + options.chip;
  std::string opt = "-O" + std::to_string(options.optLevel);
  // --split-compile=0: ptxas compiles the kernels on all cores (the same
  // SASS as one thread, checked section by section).
  SmallVector<StringRef> args = {*ptxas,  arch, opt, "--split-compile=0",
                                 ptxPath, "-o", cubinPath};
  // A failure names the command as run, up to its output file.
  if (succeeded(runTool(*ptxas, args,
                        llvm::join(ArrayRef(args).drop_back(2), " "), loc)))
    return success();
  llvm::sys::fs::remove(cubinPath);
  return failure();
}

/// What ptxas is, for the cubins' keys: the file found (a wrapper script
/// too) and what it says its version is.
static std::string ptxasIdentity(StringRef ptxas) {
  std::string identity = KernelCache::fileIdentity(ptxas);
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
/// copy returned (renameCubinKernel). An entry it cannot be written into is
/// replaced. A kernel that cannot go under the cache's name (a longer name,
/// PTX that would not map back, a cubin the name cannot be written into) is
/// assembled and kept under its own, and found there before ptxas runs
/// again; a ptxas failure is reported from a run under the kernel's own
/// name, so that its messages name the kernel.
static FailureOr<std::string>
assembleKernel(const PTXKernel &kernel, StringRef ptxas, StringRef identity,
               ArrayRef<StringRef> flags, const KernelCache &cache,
               std::atomic<int> &storeFailures, std::string &message) {
  auto keyOf = [&](StringRef ptx) {
    SmallVector<StringRef> parts = {"ptxas", identity};
    llvm::append_range(parts, flags);
    parts.push_back(ptx);
    return KernelCache::key(parts);
  };
  StringRef cached = cachedKernelName();
  std::string shared;
  if (kernel.name.size() <= cached.size() &&
      !StringRef(kernel.ptx).contains(cached)) {
    shared = renameKernelInPTX(kernel.ptx, kernel.name, cached);
    if (shared == kernel.ptx ||
        renameKernelInPTX(shared, cached, kernel.name) != kernel.ptx)
      shared.clear();
  }
  std::string sharedKey = shared.empty() ? "" : keyOf(shared);
  if (!shared.empty())
    if (std::optional<std::string> hit = cache.lookup(sharedKey, "cubin"))
      if (std::optional<std::string> named =
              renameCubinKernel(*hit, kernel.name)) {
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
              renameCubinKernel(*cubin, kernel.name)) {
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

FailureOr<std::optional<llvm::json::Object>>
vortex::assemblePTXByKernel(StringRef ptx, const PTXAssemblerOptions &options,
                            const KernelCache &cache, StringRef outDir,
                            Location loc) {
  std::optional<SmallVector<PTXKernel>> kernels = splitPTXByKernel(ptx);
  if (!kernels)
    return std::optional<llvm::json::Object>();
  FailureOr<std::string> ptxas = requirePtxas(options.toolkit, loc);
  if (failed(ptxas))
    return failure();
  std::string arch = "-arch=" + options.chip;
  std::string opt = "-O" + std::to_string(options.optLevel);
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
      emitError(loc) << messages[i];
      allOk = false;
    }
  if (!allOk)
    return failure();
  if (storeFailures > 0)
    emitWarning(loc) << storeFailures.load()
                     << " cubin(s) could not be stored in the kernel cache '"
                     << cache.directory() << "'";
  llvm::json::Object files;
  SmallVector<std::string> written;
  for (auto [kernel, cubin] : llvm::zip(*kernels, cubins)) {
    std::string name = kernel.name + ".cubin";
    SmallString<128> path(outDir);
    llvm::sys::path::append(path, name);
    if (failed(writeArtifact(path, cubin, loc))) {
      for (const std::string &done : written)
        llvm::sys::fs::remove(done);
      return failure();
    }
    written.push_back(std::string(path));
    files[kernel.name] = name;
  }
  return std::optional<llvm::json::Object>(std::move(files));
}
