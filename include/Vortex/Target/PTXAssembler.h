//===- PTXAssembler.h - ptxas: PTX to cubins, whole or by kernel -*- C++ -*-===//
//
// The last step of a GPU compile: CUDA's ptxas assembles the PTX that
// vortex-to-nvvm wrote into a cubin, for the whole module or, with a kernel
// cache, one cubin per kernel, each found in the cache or assembled once
// under the cache's kernel name and renamed in its ELF string tables
// (docs/gpu.md, "Kernel cache").
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_TARGET_PTXASSEMBLER_H
#define VORTEX_TARGET_PTXASSEMBLER_H

#include "Vortex/Target/KernelCache.h"

#include "mlir/IR/Location.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace mlir::vortex {

/// How ptxas runs.
struct PTXAssemblerOptions {
  /// -arch: sm_90, ...
  std::string chip;
  /// -O<n>.
  unsigned optLevel = 3;
  /// The CUDA toolkit whose bin/ptxas runs (else ptxas from $PATH).
  std::string toolkit;
};

/// ptxas from `toolkit`/bin, else from $PATH; empty when there is none.
std::string findPtxas(StringRef toolkit);

/// ptxas, or an error at `loc` naming where it was looked for.
FailureOr<std::string> requirePtxas(StringRef toolkit, Location loc);

/// ptxas on the file `ptxPath`, writing `cubinPath` (removed when ptxas
/// fails); a failure is reported at `loc`, naming the command as run.
LogicalResult assemblePTXFile(StringRef ptxPath, StringRef cubinPath,
                              const PTXAssemblerOptions &options,
                              Location loc);

/// A cubin per kernel of `ptx`, written as <outDir>/<kernel>.cubin, each from
/// `cache` or its own ptxas run (in parallel): {kernel: file name}, the
/// manifest's `artifacts.cubins`. Nothing is written when one fails (each
/// failure reported at `loc`). Nothing is returned (assemble the module
/// whole) when the PTX holds more than kernels at module scope.
FailureOr<std::optional<llvm::json::Object>>
assemblePTXByKernel(StringRef ptx, const PTXAssemblerOptions &options,
                    const KernelCache &cache, StringRef outDir, Location loc);

} // namespace mlir::vortex

#endif // VORTEX_TARGET_PTXASSEMBLER_H
