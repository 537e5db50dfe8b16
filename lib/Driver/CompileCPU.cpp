//===- CompileCPU.cpp - a flow to a shared object and its manifest --------===//
//
// vortex-to-cpu, the LLVM dialect translated to LLVM IR, an object for the
// host, linked into lib<flow>.so by the system C compiler, and the manifest.
//
//===----------------------------------------------------------------------===//

#include "Compilation.h"

#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Pipelines/Pipelines.h"
#include "Vortex/Target/HostObject.h"
#include "Vortex/Target/Manifest.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::driver;

/// The one vortex.flow of the module (the manifest describes one).
static LogicalResult checkOneFlow(ModuleOp module, std::string &flow) {
  auto flows = llvm::to_vector(module.getOps<FlowOp>());
  if (flows.size() == 1) {
    flow = flows.front().getSymName().str();
    return success();
  }
  InFlightDiagnostic diag = emitError(module.getLoc());
  if (flows.empty())
    diag << "no vortex.flow to compile for the CPU";
  else
    diag << "expected one vortex.flow (the manifest describes one), found "
         << flows.size();
  for (FlowOp op : flows)
    diag.attachNote(op.getLoc()) << "vortex.flow here";
  return failure();
}

/// The object of `llvmModule` linked into <outputDir>/lib<flow>.so.
static LogicalResult buildLibrary(const Compilation &c,
                                  llvm::Module &llvmModule,
                                  StringRef linker, StringRef library) {
  SmallString<128> object;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "vortex-" + c.flow, "o", object))
    return emitError(c.driverLoc)
           << "cannot create a temporary file: " << ec.message();
  llvm::scope_exit removeObject([&] { llvm::sys::fs::remove(object); });
  TimingScope objectTime = c.timing.nest("LLVM to object");
  if (failed(emitHostObject(llvmModule, object, c.driverLoc)))
    return failure();
  objectTime.stop();

  SmallString<128> libraryPath(c.options.outputDir);
  llvm::sys::path::append(libraryPath, library);
  TimingScope linkTime = c.timing.nest("link");
  return linkHostLibrary(linker, object, libraryPath,
                         llvmModule.getFunction("memrefCopy") != nullptr,
                         c.driverLoc);
}

LogicalResult driver::compileCPU(Compilation &c) {
  if (failed(checkOneFlow(c.module, c.flow)))
    return failure();
  std::string linker = findHostLinker();
  if (linker.empty())
    return emitError(c.driverLoc)
           << "no C compiler to link the shared object (set CC)";

  if (failed(c.runStage("lower to LLVM", [](OpPassManager &pm) {
        buildVortexToCPUPipeline(pm);
      })))
    return failure();
  FailureOr<ManifestAttr> manifest = getManifestAttr(c.module, c.flow);
  if (failed(manifest))
    return failure();
  if (!*manifest)
    return emitError(c.module.getLoc())
           << "vortex-to-cpu left no " << abi::kManifestAttrName;
  FailureOr<llvm::json::Object> json =
      manifestToJSON(*manifest, c.module.getLoc());
  if (failed(json))
    return failure();

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
    return failure();
  if (failed(c.createOutputDir()))
    return failure();
  if (c.options.dumpIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    if (failed(c.writeOutput(".ll", text)))
      return failure();
  }
  std::string library = "lib" + c.flow + ".so";
  if (failed(buildLibrary(c, *llvmModule, linker, library)))
    return failure();

  llvm::json::Object artifacts;
  artifacts["library"] = library;
  return writeManifestJSON(c.outPath(".manifest.json"), std::move(*json),
                           c.flow, "cpu", std::move(artifacts), c.driverLoc);
}
