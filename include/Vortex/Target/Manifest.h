//===- Manifest.h - the vortex.manifest attribute as JSON -------*- C++ -*-===//
//
// A compile's manifest (docs/manifest.md) is the module attribute
// `vortex.manifest` (a #vortex.manifest) that the lowering leaves, written as
// JSON and completed with what only the compile knows (target, artifacts).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_TARGET_MANIFEST_H
#define VORTEX_TARGET_MANIFEST_H

#include "Vortex/Dialect/VortexDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::vortex {

/// The module's manifest: null if absent, failure (reported at the module)
/// if it is no #vortex.manifest or its "flow" is not a file name. `flow` is
/// set to the flow's name.
FailureOr<ManifestAttr> getManifestAttr(ModuleOp module, std::string &flow);

/// Kernel names the manifest's steps launch, in step and launch order.
SmallVector<StringRef> getManifestKernels(ManifestAttr manifest);

/// The manifest as JSON, in the layout of docs/manifest.md; an error at
/// `loc` naming the first value that has no JSON form.
FailureOr<llvm::json::Object> manifestToJSON(ManifestAttr manifest,
                                             Location loc);

/// Adds what the compile knows (version, flow, target, artifacts) to `json`
/// and writes it to `path`, keys sorted; an error at `loc` when it cannot.
LogicalResult writeManifestJSON(StringRef path, llvm::json::Object json,
                                StringRef flow, StringRef target,
                                llvm::json::Object artifacts, Location loc);

} // namespace mlir::vortex

#endif // VORTEX_TARGET_MANIFEST_H
