//===- HostObject.h - LLVM IR to a host object and a shared object -*- C++ -*-===//
//
// The last steps of a CPU compile: LLVM's code generation for the host
// writes an object, and the system C compiler links it into lib<flow>.so.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_TARGET_HOSTOBJECT_H
#define VORTEX_TARGET_HOSTOBJECT_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::vortex {

/// The C compiler that links the shared object: $CC, else gcc, cc, clang;
/// empty when there is none.
std::string findHostLinker();

/// Emits `llvmModule` as an object file for the host (a generic CPU of its
/// kind, position-independent) at `path`; errors at `loc`.
LogicalResult emitHostObject(llvm::Module &llvmModule, StringRef path,
                             Location loc);

/// Links `object` into the shared object `libraryPath` with `linker` (and
/// libm). A module that calls MLIR's memrefCopy (`callsMemrefCopy`) links
/// MLIR's C runner utils too ($VORTEX_MLIR_RUNTIME_LIB, else LLVM's).
LogicalResult linkHostLibrary(StringRef linker, StringRef object,
                              StringRef libraryPath, bool callsMemrefCopy,
                              Location loc);

} // namespace mlir::vortex

#endif // VORTEX_TARGET_HOSTOBJECT_H
