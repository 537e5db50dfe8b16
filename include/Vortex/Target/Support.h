//===- Support.h - output files and external tools of a compile -*- C++ -*-===//
//
// What the target code shares: writing an artifact, and running an external
// tool (ptxas, the host's C compiler) with its output captured for the
// message when it fails.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_TARGET_SUPPORT_H
#define VORTEX_TARGET_SUPPORT_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace mlir::vortex {

/// Writes `contents` to `path` (through a temporary file, so a failed write
/// leaves none); an error at `loc` when it cannot.
LogicalResult writeArtifact(StringRef path, StringRef contents, Location loc);

/// Runs a tool, its stdout and stderr together into `output` (through a
/// temporary log); the exit code, or -1 with `error` set when it could not
/// run. Safe to call from several threads.
int runCapturing(StringRef program, ArrayRef<StringRef> args,
                 std::string &output, std::string &error);

/// Runs a tool; when it fails, `message` says so (as "<what> failed ...")
/// with its output. Safe to call from several threads.
LogicalResult runToolQuietly(StringRef program, ArrayRef<StringRef> args,
                             const Twine &what, std::string &message);

/// runToolQuietly, its failure reported at `loc`.
LogicalResult runTool(StringRef program, ArrayRef<StringRef> args,
                      const Twine &what, Location loc);

} // namespace mlir::vortex

#endif // VORTEX_TARGET_SUPPORT_H
