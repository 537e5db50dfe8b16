//===- KernelCache.h - per-kernel PTX pieces and their on-disk cache -----===//
//
// A flow's top-k kernels are most of its compile time (LLVM's code
// generation and ptxas) and rarely change while an author edits the score
// side. The serializing pass and vortex-compile therefore keep each kernel's
// PTX and cubin in a directory keyed by a hash of everything that made them,
// so a recompile redoes only the kernels that changed (docs/gpu.md,
// "Kernel cache").
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_TARGET_KERNELCACHE_H
#define VORTEX_TARGET_KERNELCACHE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::vortex {

/// A directory of cache entries, each a file `<key>.<kind>`: a first line
/// naming the format, the key and the kind, then the bytes. An entry is
/// written to a temporary file and renamed into place, so concurrent
/// compiles share a directory and a reader never sees half an entry. It
/// grows until `trim` bounds it (vortex-compile --kernel-cache-limit).
class KernelCache {
public:
  /// Creates `dir` if needed; an error message when it is not a usable
  /// directory.
  static FailureOr<KernelCache> open(StringRef dir, std::string &error);

  /// A key: the hex SHA-256 of the parts (each length-prefixed, so
  /// ("ab", "c") and ("a", "bc") differ), behind a format version.
  static std::string key(ArrayRef<StringRef> parts);

  /// The identity of a file that shapes an entry (ptxas, libdevice): its
  /// real path, size and modification time; "" when it does not exist.
  static std::string fileIdentity(StringRef path);

  /// A cache of no directory of its own that reads the prebuilt entries in
  /// `prebuiltDir` (the library kernels installed beside vortex) and writes
  /// nothing: `store` keeps nothing (and does not fail), `markUsed` and
  /// `trim` do nothing. For a compile without a kernel cache.
  static KernelCache prebuiltOnly(StringRef prebuiltDir) {
    KernelCache cache("");
    cache.addPrebuilt(prebuiltDir);
    return cache;
  }

  /// The cache a compile uses: `cacheDir` opened (created if needed) with
  /// `prebuiltDir`, if any, behind it; without `cacheDir`, `prebuiltOnly`;
  /// with neither, none. An error message when `cacheDir` is not usable.
  static FailureOr<std::optional<KernelCache>>
  openForCompile(StringRef cacheDir, StringRef prebuiltDir,
                 std::string &error);

  /// Adds a directory of prebuilt entries (the library kernels built with
  /// vortex and installed beside it: docs/gpu.md, "Prebuilt kernels") that
  /// this cache reads but never writes.
  void addPrebuilt(StringRef prebuiltDir) {
    prebuilt.push_back(prebuiltDir.str());
  }

  /// The entry's bytes, or nothing on a miss (a missing or unreadable
  /// entry, or one whose first line is not this key's). An entry missing
  /// here is looked up in the prebuilt directories, in order, and a hit
  /// there is stored here, as a compiled one would be.
  std::optional<std::string> lookup(StringRef key, StringRef kind) const;

  /// Marks an entry the caller found good as used now (its modification
  /// time), for `trim`.
  void markUsed(StringRef key, StringRef kind) const;

  /// Removes the least recently used entries (stored or read longest ago)
  /// until the entries take at most `maxBytes`, and temporary files that a
  /// killed compile left more than an hour ago. Files that are neither
  /// entries nor their temporaries are left alone. A compile reading an
  /// entry that another's trim removes just misses.
  void trim(uint64_t maxBytes) const;

  /// Stores an entry; false when it could not be written (the compile goes
  /// on without it). A compile killed while storing leaves a
  /// `<key>.<kind>.tmp-*` file behind, never a partial entry.
  bool store(StringRef key, StringRef kind, StringRef bytes) const;

  /// The entry's path, written or not (empty for `prebuiltOnly`).
  std::string path(StringRef key, StringRef kind) const;

  /// The cache's own directory; empty for `prebuiltOnly`.
  StringRef directory() const { return dir; }

private:
  explicit KernelCache(std::string dir) : dir(std::move(dir)) {}
  std::string dir;
  SmallVector<std::string> prebuilt;
};

/// One kernel's PTX: the module header and the kernel's entry.
struct PTXKernel {
  std::string name;
  std::string ptx;
};

/// The PTX of modules of one kernel each (`pieces`) as one module: the
/// first whole, the others from after their header, which must be the
/// first's. Nothing if a piece holds more than its kernel at module scope (a
/// `.func` or `.global` two pieces could both define).
std::optional<std::string> joinKernelPTX(ArrayRef<SmallVector<char, 0>> pieces);

/// Splits PTX joined by vortex-gpu-serialize-kernels (a header, then one
/// `.entry` after another, nothing else at module scope) into one PTX module
/// per kernel, in order. Nothing when the PTX holds anything else at module
/// scope (a `.func`, a `.global`) that a kernel may need.
std::optional<SmallVector<PTXKernel>> splitPTXByKernel(StringRef ptx);

/// Whether `ptx` is a PTX module that declares the entry `kernel` (a cache
/// entry that is not is replaced).
bool isKernelPTX(StringRef ptx, StringRef kernel);

/// The name every kernel has inside the cache's entries. A kernel's name
/// names its flow, so entries keyed and stored under it would serve one flow
/// only; under this name, a kernel that several flows share (their top-k,
/// most often) is compiled once. Long, so that a cubin entry can take any
/// kernel name up to its length in place (renameCubinKernel).
StringRef cachedKernelName();

/// `ptx` with the kernel `from`'s names renamed for the kernel `to`: every
/// identifier (a whole one: a run of letters, digits, `_` and `$`) that is
/// `from`, `from_param_<n>` or `__wg_<from>_<n>` (its entry, its
/// parameters, its workgroup buffers), in code and comments alike. Nothing
/// else changes, so an instruction or another symbol never does.
std::string renameKernelInPTX(StringRef ptx, StringRef from, StringRef to);

/// A cubin of one kernel assembled under `cachedKernelName()`, with that
/// name changed to `kernel` wherever it ends a name in the ELF string
/// tables (the kernel's symbol and its sections, `.text.<name>` and the
/// like), the rest of the old name's bytes set to NUL. Nothing when `cubin`
/// is not such an image: not ELF, no such name, the name inside another one,
/// or found outside the string tables; or when `kernel` is longer.
std::optional<std::string> renameCubinKernel(StringRef cubin,
                                             StringRef kernel);

/// Whether a line of PTX may stand at module scope in a module of one
/// kernel: the header, the kernel's entry and its performance directives.
bool isKernelPTXTopLevel(StringRef line);

} // namespace mlir::vortex

#endif // VORTEX_TARGET_KERNELCACHE_H
