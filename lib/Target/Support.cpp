//===- Support.cpp - output files and external tools of a compile ---------===//

#include "Vortex/Target/Support.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

LogicalResult vortex::writeArtifact(StringRef path, StringRef contents,
                                    Location loc) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return emitError(loc) << error;
  file->os() << contents;
  file->keep();
  return success();
}

int vortex::runCapturing(StringRef program, ArrayRef<StringRef> args,
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

LogicalResult vortex::runToolQuietly(StringRef program,
                                     ArrayRef<StringRef> args,
                                     const Twine &what, std::string &message) {
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

LogicalResult vortex::runTool(StringRef program, ArrayRef<StringRef> args,
                              const Twine &what, Location loc) {
  std::string message;
  if (succeeded(runToolQuietly(program, args, what, message)))
    return success();
  return emitError(loc) << message;
}
