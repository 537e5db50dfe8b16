//===- HostObject.cpp - LLVM IR to a host object and a shared object ------===//

#include "Vortex/Target/HostObject.h"
#include "Vortex/Target/Support.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

std::string vortex::findHostLinker() {
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

LogicalResult vortex::emitHostObject(llvm::Module &llvmModule, StringRef path,
                                     Location loc) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc) << "no LLVM target for " << triple.str() << ": "
                          << error;
  // A generic CPU: the object may run on another machine of the same kind.
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Default));
  llvmModule.setDataLayout(machine->createDataLayout());
  llvmModule.setTargetTriple(triple);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return emitError(loc) << "cannot write '" << path << "': " << ec.message();
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return emitError(loc) << "the LLVM target for " << triple.str()
                          << " cannot emit objects";
  codegen.run(llvmModule);
  return success();
}

LogicalResult vortex::linkHostLibrary(StringRef linker, StringRef object,
                                      StringRef libraryPath,
                                      bool callsMemrefCopy, Location loc) {
  SmallVector<std::string> args = {linker.str(), "-shared", object.str(),
                                   "-o", libraryPath.str(), "-lm"};
  if (callsMemrefCopy) {
    std::string utils = findRunnerUtils();
    if (!llvm::sys::fs::exists(utils))
      return emitError(loc) << "the flow calls MLIR's memrefCopy, but "
                            << utils
                            << " does not exist: set VORTEX_MLIR_RUNTIME_LIB";
    args.push_back(utils);
    args.push_back("-Wl,-rpath," + llvm::sys::path::parent_path(utils).str());
  }
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  return runTool(linker, argRefs,
                 linker + " -shared (linking " +
                     llvm::sys::path::filename(libraryPath) + ")",
                 loc);
}
