//===- LowerNontemporalLoads.cpp - Loads that skip L1 ---------------------===//
//
// LLVM 22's NVPTX back end ignores !nontemporal on loads. Kernels mark the
// rows they read once (convert-vortex-to-gpu's streaming loads), and this
// pass gives those loads the PTX eviction hint L1::no_allocate through
// inline PTX, as Triton does for its cache modifiers.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Transforms/GPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXGPULOWERNONTEMPORALLOADS
#include "Vortex/Transforms/GPU/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;

namespace {

constexpr unsigned kGlobalAddressSpace = 1;

/// Whether the module's NVVM target can encode L1::no_allocate: sm_70 and
/// PTX ISA 7.4 or later.
bool targetHasNoAllocate(gpu::GPUModuleOp module) {
  ArrayAttr targets = module ? module.getTargetsAttr() : ArrayAttr();
  if (!targets)
    return false;
  for (Attribute attr : targets) {
    auto target = dyn_cast<NVVM::NVVMTargetAttr>(attr);
    if (!target)
      continue;
    std::optional<unsigned> sm = vortex::parseSMVersion(target.getChip());
    if (!sm || *sm < 70)
      return false;
    SmallVector<StringRef> features;
    target.getFeatures().split(features, ',', -1, /*KeepEmpty=*/false);
    for (StringRef feature : features) {
      unsigned version;
      feature = feature.trim();
      if (feature.consume_front("+ptx") && !feature.getAsInteger(10, version))
        return version >= 74;
    }
    return false;
  }
  return false;
}

bool isKernel(LLVM::LLVMFuncOp func) {
  return func && (func->hasAttr(gpu::GPUDialect::getKernelFuncAttrName()) ||
                  func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()));
}

/// Whether `ptr` addresses global memory: a global pointer, or a generic
/// one computed from a pointer argument of the kernel `func`.
bool isGlobalAddress(Value ptr, LLVM::LLVMFuncOp func) {
  while (true) {
    // Global, or generic (0): any other space (shared, local) is not.
    unsigned space =
        cast<LLVM::LLVMPointerType>(ptr.getType()).getAddressSpace();
    if (space == kGlobalAddressSpace)
      return true;
    if (space != 0)
      return false;
    if (auto arg = dyn_cast<BlockArgument>(ptr))
      return arg.getOwner()->isEntryBlock() &&
             arg.getOwner()->getParentOp() == func.getOperation();
    Operation *def = ptr.getDefiningOp();
    if (auto gep = dyn_cast_or_null<LLVM::GEPOp>(def)) {
      ptr = gep.getBase();
      continue;
    }
    if (auto cast = dyn_cast_or_null<LLVM::AddrSpaceCastOp>(def)) {
      ptr = cast.getArg();
      if (!isa<LLVM::LLVMPointerType>(ptr.getType()))
        return false;
      continue;
    }
    // A memref descriptor's pointer: find the insertvalue that put it at
    // this position.
    if (auto extract = dyn_cast_or_null<LLVM::ExtractValueOp>(def)) {
      Value container = extract.getContainer();
      std::optional<Value> found;
      while (auto insert = container.getDefiningOp<LLVM::InsertValueOp>()) {
        if (insert.getPosition() == extract.getPosition()) {
          found = insert.getValue();
          break;
        }
        container = insert.getContainer();
      }
      if (!found || !isa<LLVM::LLVMPointerType>(found->getType()))
        return false;
      ptr = *found;
      continue;
    }
    return false;
  }
}

/// The inline PTX of one `ld.global.L1::no_allocate` of `words` 32-bit
/// words at `offset` bytes past the address operand, and its constraints.
std::pair<std::string, std::string> noAllocateAsm(unsigned words,
                                                  unsigned offset) {
  std::string asmString = "ld.global.L1::no_allocate";
  if (words > 1)
    asmString += ".v" + std::to_string(words);
  asmString += ".b32 ";
  asmString += words > 1 ? "{" : "";
  std::string constraints;
  for (unsigned w = 0; w < words; ++w) {
    asmString += (w ? ", $" : "$") + std::to_string(w);
    constraints += "=r,";
  }
  asmString += words > 1 ? "}" : "";
  asmString += ", [$" + std::to_string(words);
  if (offset)
    asmString += "+" + std::to_string(offset);
  asmString += "];";
  constraints += "l";
  return {asmString, constraints};
}

/// A nontemporal load of global memory in a kernel whose target has
/// L1::no_allocate, as inline PTX loads of that hint and a bitcast.
struct LowerNontemporalLoad final : OpRewritePattern<LLVM::LoadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LLVM::LoadOp load,
                                PatternRewriter &rewriter) const override {
    if (!load.getNontemporal() || load.getVolatile_() ||
        load.getOrdering() != LLVM::AtomicOrdering::not_atomic)
      return rewriter.notifyMatchFailure(load, "not a plain nontemporal load");
    auto func = load->getParentOfType<LLVM::LLVMFuncOp>();
    if (!isKernel(func) ||
        !targetHasNoAllocate(func->getParentOfType<gpu::GPUModuleOp>()) ||
        !isGlobalAddress(load.getAddr(), func))
      return rewriter.notifyMatchFailure(load, "not known global memory of "
                                               "a kernel with the hint");
    Type type = load.getType();
    if (!LLVM::isCompatibleType(type) || isa<LLVM::LLVMPointerType>(type))
      return rewriter.notifyMatchFailure(load, "not a value type");
    uint64_t bytes = DataLayout::closest(load).getTypeSize(type);
    uint64_t align = load.getAlignment().value_or(0);
    // One b32, v2.b32 or v4.b32 load, or several v4.b32 loads 16 bytes
    // apart (sm_90 has no wider vector load), each aligned to its size.
    unsigned words = bytes / 4;
    bool single = llvm::is_contained({1u, 2u, 4u}, words) && align >= bytes;
    bool pieces = bytes % 16 == 0 && bytes <= 64 && align >= 16;
    if (bytes % 4 != 0 || (!single && !pieces))
      return rewriter.notifyMatchFailure(load, "size or alignment");

    Location loc = load.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value addr = load.getAddr();
    auto global = LLVM::LLVMPointerType::get(ctx, kGlobalAddressSpace);
    if (addr.getType() != global)
      addr = LLVM::AddrSpaceCastOp::create(rewriter, loc, global, addr);
    Type i32 = rewriter.getI32Type();
    unsigned perLoad = single ? words : 4;
    Type pieceType = perLoad == 1
                         ? i32
                         : LLVM::LLVMStructType::getLiteral(
                               ctx, SmallVector<Type>(perLoad, i32));
    SmallVector<Value> wordValues;
    for (unsigned offset = 0; offset < bytes; offset += perLoad * 4) {
      auto [asmString, constraints] = noAllocateAsm(perLoad, offset);
      auto asmOp = LLVM::InlineAsmOp::create(
          rewriter, loc, pieceType, ValueRange{addr}, asmString, constraints,
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::TailCallKind::None,
          LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
          /*operand_attrs=*/ArrayAttr());
      if (perLoad == 1) {
        wordValues.push_back(asmOp.getRes());
        continue;
      }
      for (unsigned w = 0; w < perLoad; ++w)
        wordValues.push_back(
            LLVM::ExtractValueOp::create(rewriter, loc, asmOp.getRes(), w));
    }
    Value bits = wordValues.front();
    if (words > 1) {
      auto vecType = VectorType::get({words}, i32);
      bits = LLVM::PoisonOp::create(rewriter, loc, vecType);
      for (auto [w, word] : llvm::enumerate(wordValues)) {
        Value index = LLVM::ConstantOp::create(rewriter, loc, i32, w);
        bits = LLVM::InsertElementOp::create(rewriter, loc, bits, word, index);
      }
    }
    if (bits.getType() != type)
      bits = LLVM::BitcastOp::create(rewriter, loc, type, bits);
    rewriter.replaceOp(load, bits);
    return success();
  }
};

struct LowerNontemporalLoads final
    : vortex::impl::VortexGPULowerNontemporalLoadsBase<LowerNontemporalLoads> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    vortex::populateVortexGPULowerNontemporalLoadsPatterns(patterns);
    // One walk: a rewritten load leaves no nontemporal load behind, and
    // nothing else is folded.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void vortex::populateVortexGPULowerNontemporalLoadsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerNontemporalLoad>(patterns.getContext());
}
