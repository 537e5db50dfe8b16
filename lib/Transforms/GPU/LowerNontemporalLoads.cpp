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

/// The inline PTX load for `load`, or failure when it does not qualify.
LogicalResult rewriteLoad(LLVM::LoadOp load, LLVM::LLVMFuncOp func,
                          const DataLayout &layout) {
  if (!load.getNontemporal() || load.getVolatile_() ||
      load.getOrdering() != LLVM::AtomicOrdering::not_atomic ||
      !isGlobalAddress(load.getAddr(), func))
    return failure();
  Type type = load.getType();
  if (!LLVM::isCompatibleType(type) || isa<LLVM::LLVMPointerType>(type))
    return failure();
  uint64_t bytes = layout.getTypeSize(type);
  uint64_t align = load.getAlignment().value_or(0);
  // One b32, v2.b32 or v4.b32 load, or several v4.b32 loads 16 bytes apart
  // (sm_90 has no wider vector load), each aligned to its size.
  unsigned words = bytes / 4;
  bool single = llvm::is_contained({1u, 2u, 4u}, words) && align >= bytes;
  bool pieces = bytes % 16 == 0 && bytes <= 64 && align >= 16;
  if (bytes % 4 != 0 || (!single && !pieces))
    return failure();

  OpBuilder b(load);
  Location loc = load.getLoc();
  MLIRContext *ctx = b.getContext();
  Value addr = load.getAddr();
  auto global = LLVM::LLVMPointerType::get(ctx, kGlobalAddressSpace);
  if (addr.getType() != global)
    addr = LLVM::AddrSpaceCastOp::create(b, loc, global, addr);
  Type i32 = b.getI32Type();
  unsigned perLoad = single ? words : 4;
  Type pieceType = perLoad == 1
                       ? i32
                       : LLVM::LLVMStructType::getLiteral(
                             ctx, SmallVector<Type>(perLoad, i32));
  SmallVector<Value> wordValues;
  for (unsigned offset = 0; offset < bytes; offset += perLoad * 4) {
    std::string asmString = "ld.global.L1::no_allocate";
    if (perLoad > 1)
      asmString += ".v" + std::to_string(perLoad);
    asmString += ".b32 ";
    asmString += perLoad > 1 ? "{" : "";
    std::string constraints;
    for (unsigned w = 0; w < perLoad; ++w) {
      asmString += (w ? ", $" : "$") + std::to_string(w);
      constraints += "=r,";
    }
    asmString += perLoad > 1 ? "}" : "";
    asmString += ", [$" + std::to_string(perLoad);
    if (offset)
      asmString += "+" + std::to_string(offset);
    asmString += "];";
    constraints += "l";
    auto asmOp = LLVM::InlineAsmOp::create(
        b, loc, pieceType, ValueRange{addr}, asmString, constraints,
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
          LLVM::ExtractValueOp::create(b, loc, asmOp.getRes(), w));
  }
  Value bits = wordValues.front();
  if (words > 1) {
    auto vecType = VectorType::get({words}, i32);
    bits = LLVM::PoisonOp::create(b, loc, vecType);
    for (auto [w, word] : llvm::enumerate(wordValues)) {
      Value index = LLVM::ConstantOp::create(b, loc, i32, w);
      bits = LLVM::InsertElementOp::create(b, loc, bits, word, index);
    }
  }
  Value result = bits.getType() == type
                     ? bits
                     : LLVM::BitcastOp::create(b, loc, type, bits).getResult();
  load.replaceAllUsesWith(result);
  load.erase();
  return success();
}

struct LowerNontemporalLoads final
    : vortex::impl::VortexGPULowerNontemporalLoadsBase<LowerNontemporalLoads> {
  void runOnOperation() override {
    SmallVector<LLVM::LoadOp> loads;
    getOperation()->walk([&](LLVM::LoadOp load) {
      if (load.getNontemporal())
        loads.push_back(load);
    });
    for (LLVM::LoadOp load : loads) {
      auto func = load->getParentOfType<LLVM::LLVMFuncOp>();
      if (!isKernel(func) ||
          !targetHasNoAllocate(func->getParentOfType<gpu::GPUModuleOp>()))
        continue;
      (void)rewriteLoad(load, func, DataLayout::closest(load));
    }
  }
};

} // namespace
