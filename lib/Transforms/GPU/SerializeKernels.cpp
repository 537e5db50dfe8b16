//===- SerializeKernels.cpp - gpu-module-to-binary, a kernel per thread ---===//
//
// LLVM's optimization and NVPTX code generation spend most of a flow's time
// to PTX, and a flow has several kernels, one of them (the top-k) several
// times larger than the rest. LLVM compiles each function on its own, so a
// copy of the gpu.module per kernel gives the same PTX per kernel and lets
// the copies compile on separate threads; PTX is text, and the pieces join
// into the PTX of the whole module.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Transforms/GPU/Passes.h"

#include "Vortex/Target/KernelCache.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <atomic>

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXGPUSERIALIZEKERNELS
#include "Vortex/Transforms/GPU/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;

namespace {

bool isKernel(Operation &op) {
  return isa<SymbolOpInterface>(op) &&
         op.hasAttr(gpu::GPUDialect::getKernelFuncAttrName());
}

/// A copy of `module` (not inserted anywhere) with `kernel` as its only
/// kernel and only the symbols that kernel still uses.
gpu::GPUModuleOp pieceFor(gpu::GPUModuleOp module, StringAttr kernel) {
  auto piece = cast<gpu::GPUModuleOp>(module->clone());
  Block &body = piece.getBodyRegion().front();
  for (Operation &op : llvm::make_early_inc_range(body))
    if (isKernel(op) && SymbolTable::getSymbolName(&op) != kernel)
      op.erase();
  // Erasing a symbol can leave others unused (a global only it read).
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (!isa<SymbolOpInterface>(op) || isKernel(op) ||
          !SymbolTable::symbolKnownUseEmpty(&op, piece))
        continue;
      op.erase();
      erased = true;
    }
  }
  return piece;
}

/// What makes a piece's PTX, as bytes: its bytecode, which no printing
/// option changes, with the locations left out unless they carry debug
/// information (without it LLVM's output does not depend on them, and a
/// flow edited elsewhere keeps its kernels' keys).
FailureOr<std::string> pieceFingerprint(gpu::GPUModuleOp piece) {
  OwningOpRef<Operation *> copy(piece->clone());
  bool debugInfo = false;
  copy->walk([&](Operation *op) {
    if (auto fused = dyn_cast<FusedLoc>(op->getLoc()))
      debugInfo |= static_cast<bool>(fused.getMetadata());
  });
  if (!debugInfo) {
    Location unknown = UnknownLoc::get(piece.getContext());
    copy->walk([&](Operation *op) {
      op->setLoc(unknown);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            arg.setLoc(unknown);
    });
  }
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  if (failed(writeBytecodeToFile(copy.get(), os)))
    return failure();
  return bytes;
}

/// Renames `kernel` in `piece` to the cache's name, and its workgroup
/// buffers `__wg_<kernel>_<n>` with it (the names renameKernelInPTX maps
/// back), so that neither the piece's key nor its PTX depends on the name:
/// the same kernel in another flow finds the entry. Other symbols keep
/// their names (a declaration such as libdevice's must). False, with the
/// piece unchanged, when a symbol holds the cache's name already or the
/// piece's symbol uses cannot all be found.
bool renameForCache(gpu::GPUModuleOp piece, StringRef kernel) {
  StringRef cached = vortex::cachedKernelName();
  Region &body = piece.getBodyRegion();
  if (!SymbolTable::getSymbolUses(&body))
    return false;
  SmallVector<std::pair<Operation *, StringAttr>> renames;
  for (Operation &op : body.front()) {
    if (!isa<SymbolOpInterface>(op))
      continue;
    StringRef name = SymbolTable::getSymbolName(&op).getValue();
    if (name.contains(cached))
      return false;
    std::string renamed = vortex::renameKernelInPTX(name, kernel, cached);
    if (renamed != name)
      renames.emplace_back(&op, StringAttr::get(piece.getContext(), renamed));
  }
  // The module's name reaches the key, not the PTX.
  SymbolTable::setSymbolName(piece, "vortex_cached_kernels");
  for (auto [op, renamed] : renames) {
    // Cannot fail: every use was found above.
    (void)SymbolTable::replaceAllSymbolUses(op, renamed, piece);
    SymbolTable::setSymbolName(op, renamed);
  }
  return true;
}

struct SerializeKernels
    : mlir::vortex::impl::VortexGPUSerializeKernelsBase<SerializeKernels> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<gpu::CompilationTarget> target =
        llvm::StringSwitch<std::optional<gpu::CompilationTarget>>(format)
            .Cases({"offloading", "llvm"}, gpu::CompilationTarget::Offload)
            .Cases({"assembly", "isa"}, gpu::CompilationTarget::Assembly)
            .Cases({"binary", "bin"}, gpu::CompilationTarget::Binary)
            .Cases({"fatbinary", "fatbin"}, gpu::CompilationTarget::Fatbin)
            .Default(std::nullopt);
    if (!target) {
      getOperation().emitError()
          << "unknown format '" << format
          << "'; expected isa, bin, fatbin or llvm (or assembly, binary, "
             "fatbinary, offloading)";
      return signalPassFailure();
    }
    if (!prebuiltDir.empty() && !llvm::sys::fs::is_directory(prebuiltDir)) {
      getOperation().emitError()
          << "prebuilt-dir '" << prebuiltDir << "' is not a directory";
      return signalPassFailure();
    }
    std::string error;
    FailureOr<std::optional<vortex::KernelCache>> opened =
        vortex::KernelCache::openForCompile(cacheDir, prebuiltDir, error);
    if (failed(opened)) {
      getOperation().emitError() << error;
      return signalPassFailure();
    }
    cache = std::move(*opened);
    gpu::TargetOptions options(toolkitPath, /*librariesToLink=*/{},
                               /*cmdOptions=*/"", /*elfSection=*/"", *target);
    for (auto module : llvm::make_early_inc_range(
             getOperation().getBody()->getOps<gpu::GPUModuleOp>()))
      if (failed(serialize(module, options)))
        return signalPassFailure();
  }

  LogicalResult serialize(gpu::GPUModuleOp module,
                          const gpu::TargetOptions &options) {
    ArrayAttr targets = module.getTargetsAttr();
    if (!targets || targets.empty())
      return module.emitError("the module has no target attributes");
    SmallVector<Attribute> objects;
    for (Attribute attr : targets) {
      auto target = dyn_cast<gpu::TargetAttrInterface>(attr);
      if (!target)
        return module.emitError() << "target " << attr
                                  << " is not a GPU compilation target";
      std::optional<SmallVector<char, 0>> object;
      if (isa<NVVM::NVVMTargetAttr>(attr) &&
          options.getCompilationTarget() == gpu::CompilationTarget::Assembly) {
        FailureOr<std::optional<SmallVector<char, 0>>> joined =
            serializeByKernel(module, target, options);
        if (failed(joined))
          return failure();
        object = std::move(*joined);
      }
      if (!object)
        object = target.serializeToObject(module, options);
      if (!object)
        return module.emitError("an error happened while serializing the "
                                "module");
      Attribute objectAttr = target.createObject(module, *object, options);
      if (!objectAttr)
        return module.emitError("an error happened while creating the "
                                "object");
      objects.push_back(objectAttr);
    }
    OpBuilder b(module);
    b.setInsertionPointAfter(module);
    gpu::BinaryOp::create(b, module.getLoc(), module.getName(),
                          module.getOffloadingHandlerAttr(),
                          b.getArrayAttr(objects));
    module->erase();
    return success();
  }

  /// With `cache-dir`: where pieces' PTX is kept.
  std::optional<vortex::KernelCache> cache;

  /// What a piece's PTX depends on besides the piece: LLVM, the format and
  /// the libdevice it links.
  SmallVector<std::string> cacheContext(const gpu::TargetOptions &options) {
    SmallString<256> libdevice(options.getToolkitPath());
    llvm::sys::path::append(libdevice, "nvvm", "libdevice",
                            "libdevice.10.bc");
    return {"llvm " LLVM_VERSION_STRING, format,
            options.getToolkitPath().str(),
            vortex::KernelCache::fileIdentity(libdevice)};
  }

  /// A piece's PTX: from the cache when it holds the piece, else compiled
  /// (and stored). With the cache the piece is compiled, keyed and stored
  /// under the cache's kernel name, which its PTX then trades for the
  /// kernel's. An entry that is not a kernel's PTX is replaced.
  std::optional<SmallVector<char, 0>>
  serializePiece(gpu::GPUModuleOp piece, StringRef kernel,
                 gpu::TargetAttrInterface target,
                 const gpu::TargetOptions &options,
                 ArrayRef<std::string> context,
                 std::atomic<int> &storeFailures) {
    std::string key;
    StringRef name = kernel;
    if (cache) {
      if (renameForCache(piece, kernel))
        name = vortex::cachedKernelName();
      FailureOr<std::string> fingerprint = pieceFingerprint(piece);
      if (succeeded(fingerprint)) {
        SmallVector<StringRef> parts(context.begin(), context.end());
        parts.push_back(*fingerprint);
        key = vortex::KernelCache::key(parts);
      }
    }
    auto named = [&](StringRef ptx) {
      // Without the cache's name (no cache, or a piece left as it was)
      // there is nothing to map back.
      std::string renamed = name == kernel
                                ? ptx.str()
                                : vortex::renameKernelInPTX(ptx, name, kernel);
      return SmallVector<char, 0>(renamed.begin(), renamed.end());
    };
    if (!key.empty())
      if (std::optional<std::string> hit = cache->lookup(key, "ptx"))
        if (vortex::isKernelPTX(*hit, name)) {
          cache->markUsed(key, "ptx");
          return named(*hit);
        }
    std::optional<SmallVector<char, 0>> object =
        target.serializeToObject(piece, options);
    if (!object)
      return std::nullopt;
    StringRef ptx(object->data(), object->size());
    if (!key.empty() && !cache->store(key, "ptx", ptx))
      ++storeFailures;
    return named(ptx);
  }

  /// The module's PTX, each kernel compiled from its own piece; nothing
  /// (serialize the module whole) when the pieces cannot be joined, or when
  /// there is a single kernel and no cache.
  FailureOr<std::optional<SmallVector<char, 0>>>
  serializeByKernel(gpu::GPUModuleOp module, gpu::TargetAttrInterface target,
                    const gpu::TargetOptions &options) {
    SmallVector<StringAttr> kernels;
    for (Operation &op : module.getBodyRegion().front())
      if (isKernel(op))
        kernels.push_back(SymbolTable::getSymbolName(&op));
    if (kernels.empty() || (kernels.size() < 2 && !cache))
      return std::optional<SmallVector<char, 0>>();
    SmallVector<gpu::GPUModuleOp> pieces;
    for (StringAttr kernel : kernels)
      pieces.push_back(pieceFor(module, kernel));
    llvm::scope_exit destroyPieces([&] {
      for (gpu::GPUModuleOp piece : pieces)
        piece->erase();
    });
    // Largest first: the threads take pieces in order, and the largest
    // bounds the time.
    SmallVector<size_t> order(pieces.size());
    SmallVector<size_t> size(pieces.size(), 0);
    for (size_t i = 0; i < pieces.size(); ++i) {
      order[i] = i;
      pieces[i]->walk([&](Operation *) { ++size[i]; });
    }
    llvm::stable_sort(order, [&](size_t a, size_t b) {
      return size[a] > size[b];
    });
    SmallVector<SmallVector<char, 0>> ptx(pieces.size());
    SmallVector<std::string> context;
    if (cache)
      context = cacheContext(options);
    std::atomic<int> storeFailures = 0;
    if (failed(failableParallelForEach(
            &getContext(), order, [&](size_t i) -> LogicalResult {
              std::optional<SmallVector<char, 0>> object =
                  serializePiece(pieces[i], kernels[i].getValue(), target,
                                 options, context, storeFailures);
              if (!object)
                return pieces[i].emitError()
                       << "an error happened while serializing kernel @"
                       << kernels[i].getValue();
              ptx[i] = std::move(*object);
              return success();
            })))
      return failure();
    if (storeFailures > 0)
      module.emitWarning() << storeFailures
                           << " kernel(s) could not be stored in the kernel "
                              "cache '"
                           << cache->directory() << "'";
    // One kernel: its piece's PTX is the module's (less unused symbols).
    if (ptx.size() == 1)
      return std::optional<SmallVector<char, 0>>(std::move(ptx.front()));
    std::optional<std::string> joined = vortex::joinKernelPTX(ptx);
    if (!joined)
      return std::optional<SmallVector<char, 0>>();
    return std::optional<SmallVector<char, 0>>(
        SmallVector<char, 0>(joined->begin(), joined->end()));
  }
};

} // namespace
