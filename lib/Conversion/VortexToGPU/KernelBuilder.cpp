//===- KernelBuilder.cpp - Shared helpers of the GPU code generator -------===//
//
// What KernelBuilder.h declares for every kernel kind: the flow context's
// buffers, an empty kernel, its loop annotation, and the per-row kernels'
// row bounds, strided loops and manifest records.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

int64_t mlir::vortex::gpugen::computeExtent(VTensorType t, unsigned dim) {
  return t.getExplicitPadding() ? nextPowerOf2(t.getInner(dim))
                                : t.getInner(dim);
}

std::string FlowContext::allocScratch(Value v) {
  auto it = bufferOf.find(v);
  if (it != bufferOf.end())
    return it->second;
  auto type = cast<VTensorType>(v.getType());
  // A parameter-format value (a masked parameter) is one shared row.
  std::string lead = type.isParameter() ? "1"
                     : type.isBatched() ? abi::kRows.str()
                                        : abi::kTotal.str();
  // Index values (trtllm block tables and counts) stay i32; the rest f32.
  Type element = type.getElementType().isInteger(32)
                     ? Type(IntegerType::get(v.getContext(), 32))
                     : Type(Float32Type::get(v.getContext()));
  std::string name = allocScratchBuffer(lead, computeExtent(type, 1),
                                        computeExtent(type, 2), element);
  bufferOf[v] = name;
  return name;
}

std::string FlowContext::allocScratchBuffer(StringRef lead, int64_t d0,
                                            int64_t d1, Type elementType) {
  // A flow tensor (a field, a parameter) may be named like a scratch buffer.
  std::string name;
  do
    name = "scratch" + std::to_string(nextScratch++);
  while (abi.tensors.count(name));
  TensorRecord rec;
  rec.role = Role::Scratch;
  rec.elementType = elementType;
  rec.shape = {lead.str(), std::to_string(d0), std::to_string(d1)};
  abi.tensors[name] = rec;
  return name;
}

std::string FlowContext::statusBuffer() {
  for (auto &[name, rec] : abi.tensors)
    if (rec.role == Role::Status)
      return name;
  // Named apart from the flow's own tensors (a field may be called status).
  std::string name = "status";
  for (unsigned i = 0; abi.tensors.count(name); ++i)
    name = "status" + std::to_string(i);
  TensorRecord rec;
  rec.role = Role::Status;
  rec.elementType = IntegerType::get(flow.getContext(), 32);
  rec.shape = {std::to_string(abi::kStatusWords)};
  abi.tensors[name] = rec;
  return name;
}

gpu::GPUFuncOp mlir::vortex::gpugen::createKernel(FlowContext &ctx,
                                                  OpBuilder &b, Location loc,
                                                  StringRef name,
                                                  ArrayRef<Param> params,
                                                  int64_t threads) {
  SmallVector<Type> types;
  for (const Param &p : params)
    types.push_back(p.isBuffer
                        ? Type(MemRefType::get({ShapedType::kDynamic},
                                               p.elementType))
                        : (p.elementType ? p.elementType
                                         : Type(b.getI32Type())));
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

void mlir::vortex::gpugen::keepLoopsRolled(gpu::GPUFuncOp func) {
  MLIRContext *ctx = func.getContext();
  auto unroll = LLVM::LoopUnrollAttr::get(
      ctx, /*disable=*/{}, /*count=*/{},
      /*runtimeDisable=*/BoolAttr::get(ctx, true), /*full=*/{}, {}, {}, {});
  auto annotation = LLVM::LoopAnnotationAttr::get(
      ctx, {}, {}, {}, unroll, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
  // scf-to-cf moves LLVM attributes of a loop onto its back edge, where the
  // LLVM translation makes them the loop's llvm.loop metadata.
  func.walk([&](scf::ForOp loop) {
    loop->setAttr(LLVM::BrOp::getLoopAnnotationAttrName(
                      OperationName(LLVM::BrOp::getOperationName(), ctx)),
                  annotation);
  });
}

RowInfo mlir::vortex::gpugen::rowInfo(Gen &g, FlowConfigAttr cfg, Value indptr,
                                      Value r, Value limit) {
  int64_t bos = cfg.getReservedBos(), eos = cfg.getReservedEos();
  RowKnobs knobs{g.idx(cfg.getMinBudget()),
                 g.f64(cfg.getTopkRatio().getValueAsDouble()), g.idx(bos),
                 g.idx(eos)};
  return rowInfo(g, knobs, indptr, r, limit);
}

RowInfo mlir::vortex::gpugen::rowInfo(Gen &g, const RowKnobs &knobs,
                                      Value indptr, Value r, Value limit) {
  RowInfo info;
  Value s = g.toIndex(g.load(indptr, r));
  Value e = g.toIndex(g.load(indptr, g.add(r, g.idx(1))));
  // Unsigned: a negative entry is huge and clamps to the limit.
  info.start = g.minU(s, limit);
  info.end = g.minU(e, limit);
  info.end = g.select(g.cmpI(arith::CmpIPredicate::ult, info.end, info.start),
                      info.start, info.end);
  info.exact = g.andI(g.cmpI(arith::CmpIPredicate::eq, info.start, s),
                      g.cmpI(arith::CmpIPredicate::eq, info.end, e));
  info.n = g.sub(info.end, info.start);
  info.budget = knobs.ratio
                    ? emitRowBudget(g, knobs.minBudget, knobs.ratio, info.n)
                    : knobs.minBudget;
  info.needs = g.cmpI(arith::CmpIPredicate::sgt, info.n, info.budget);
  info.lo = g.add(info.start, knobs.bos);
  info.hi = g.sub(info.end, knobs.eos);
  return info;
}

void mlir::vortex::gpugen::recordRowKernel(FlowContext &ctx,
                                           gpu::GPUFuncOp func,
                                           int64_t threads,
                                           ArrayRef<Param> params,
                                           ArrayRef<std::string> reads,
                                           ArrayRef<std::string> writes) {
  KernelRecord rec;
  rec.name = func.getName().str();
  rec.step = Step::Indexer;
  rec.grid = GridKind::Rows;
  rec.threads = threads;
  for (auto [i, buf] : llvm::enumerate(func.getWorkgroupAttributions())) {
    auto type = cast<MemRefType>(buf.getType());
    auto align =
        dyn_cast_or_null<IntegerAttr>(func.getWorkgroupAttributionAttr(
            i, LLVM::LLVMDialect::getAlignAttrName()));
    rec.sharedBytes =
        llvm::alignTo(rec.sharedBytes, align ? align.getInt() : 1) +
        type.getNumElements() * type.getElementTypeBitWidth() / 8;
  }
  rec.params.assign(params.begin(), params.end());
  rec.reads.assign(reads.begin(), reads.end());
  rec.writes.assign(writes.begin(), writes.end());
  ctx.abi.kernels.push_back(rec);
}

scf::ForOp mlir::vortex::gpugen::strided(
    Gen &g, Value lo, Value hi, Value tid, int64_t threads, ValueRange inits,
    function_ref<SmallVector<Value>(Gen &, Value, ValueRange)> body) {
  // Iterate over k with p = lo + tid + k * threads.
  Value span = g.sub(g.maxI(hi, lo), lo);
  Value count = g.ceilDiv(span, g.idx(threads));
  return g.forLoop(g.idx(0), count, inits,
                   [&](Gen &x, Value k, ValueRange acc) -> SmallVector<Value> {
                     Value p = x.add(x.add(lo, tid), x.mul(k, x.idx(threads)));
                     Value in = x.lt(p, hi);
                     auto res = x.ifElse(
                         in, acc.getTypes(),
                         [&](Gen &y) { return body(y, p, acc); },
                         [&](Gen &) { return SmallVector<Value>(acc); });
                     return res;
                   });
}
