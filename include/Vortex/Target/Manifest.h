//===- Manifest.h - the vortex.manifest attribute as JSON -------*- C++ -*-===//
//
// A compile's manifest (docs/manifest.md) is the module attribute
// `vortex.manifest` that the lowering leaves, checked, converted to JSON and
// completed with what only the compile knows (version, target, artifacts).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_TARGET_MANIFEST_H
#define VORTEX_TARGET_MANIFEST_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::vortex {

/// The module's manifest attribute: null if absent, failure (reported at the
/// module) if malformed: not a dictionary, another version, a step that is
/// not {args, writes, kernels}, a "flow" that is not a file name. `flow` is
/// set to its "flow" when it has one.
FailureOr<DictionaryAttr> getManifestAttr(ModuleOp module, std::string &flow);

/// Kernel names the manifest's steps launch ("steps": {<step>: {"kernels":
/// [{"kernel": name, ...}, ...]}}); anything shaped otherwise is not
/// inspected.
SmallVector<StringRef> getManifestKernels(DictionaryAttr manifest);

/// The manifest attribute as JSON: dictionaries, arrays (and dense arrays),
/// strings, integers, floats, booleans and unit attributes (true); an error
/// at `loc` naming the first value that has no JSON form.
FailureOr<llvm::json::Object> manifestToJSON(DictionaryAttr manifest,
                                             Location loc);

/// Adds what the compile knows (version, flow, target, artifacts) to `json`
/// and writes it to `path`, keys sorted; an error at `loc` when it cannot.
LogicalResult writeManifestJSON(StringRef path, llvm::json::Object json,
                                StringRef flow, StringRef target,
                                llvm::json::Object artifacts, Location loc);

} // namespace mlir::vortex

#endif // VORTEX_TARGET_MANIFEST_H
