//===- VortexToGPU.cpp - Flows to GPU kernels and a launch manifest -------===//
//
// Walks each flow body in order: workload kernels, per-row scans and the
// top-k become gpu.func kernels of one gpu.module; the buffers they share
// (flow tensors and f32 scratch) and the launch order become the
// `vortex.manifest` module attribute (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "Vortex/Conversion/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_CONVERTVORTEXTOGPU
#include "Vortex/Conversion/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

int64_t mlir::vortex::gpugen::computeExtent(VTensorType t, unsigned dim) {
  return t.getExplicitPadding() ? nextPowerOf2(t.getInner(dim))
                                : t.getInner(dim);
}

std::string mlir::vortex::gpugen::dtypeName(Type t) {
  if (t.isBF16())
    return "bf16";
  if (t.isF16())
    return "f16";
  if (t.isF32())
    return "f32";
  if (isa<Float8E4M3FNType>(t))
    return "f8E4M3FN";
  if (isa<Float8E5M2Type>(t))
    return "f8E5M2";
  return "i32";
}

std::string FlowContext::allocScratch(Value v) {
  auto it = bufferOf.find(v);
  if (it != bufferOf.end())
    return it->second;
  auto type = cast<VTensorType>(v.getType());
  std::string name = "scratch" + std::to_string(nextScratch++);
  TensorRecord rec;
  rec.role = "scratch";
  rec.elementType = Float32Type::get(v.getContext());
  rec.shape = {type.isBatched() ? "rows" : "total",
               std::to_string(computeExtent(type, 1)),
               std::to_string(computeExtent(type, 2))};
  tensors[name] = rec;
  bufferOf[v] = name;
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
                        : Type(b.getI32Type()));
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

namespace {

Attribute strArray(Builder &b, ArrayRef<std::string> items) {
  SmallVector<Attribute> attrs;
  for (const std::string &s : items)
    attrs.push_back(b.getStringAttr(s));
  return b.getArrayAttr(attrs);
}

DictionaryAttr buildManifest(Builder &b, FlowContext &ctx) {
  FlowConfigAttr c = ctx.config;
  SmallVector<NamedAttribute> config = {
      b.getNamedAttr("block_size", b.getI64IntegerAttr(c.getBlockSize())),
      b.getNamedAttr("page_size", b.getI64IntegerAttr(c.getPageSize())),
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(c.getHeadDim())),
      b.getNamedAttr("group_size", b.getI64IntegerAttr(c.getGroupSize())),
      b.getNamedAttr("topk_val", b.getI64IntegerAttr(c.getTopkVal())),
      b.getNamedAttr("topk_ratio",
                     b.getF64FloatAttr(c.getTopkRatio().getValueAsDouble())),
      b.getNamedAttr("reserved_bos", b.getI64IntegerAttr(c.getReservedBos())),
      b.getNamedAttr("reserved_eos", b.getI64IntegerAttr(c.getReservedEos())),
      b.getNamedAttr("intermediate_dtype",
                     b.getStringAttr(dtypeName(c.getIntermediateDtype()))),
      b.getNamedAttr("kv_dtype", b.getStringAttr(dtypeName(c.getKvDtype())))};
  SmallVector<NamedAttribute> tensors;
  for (auto &[name, rec] : ctx.tensors) {
    SmallVector<Attribute> shape;
    for (const std::string &d : rec.shape) {
      int64_t v;
      if (!StringRef(d).getAsInteger(10, v))
        shape.push_back(b.getI64IntegerAttr(v));
      else
        shape.push_back(b.getStringAttr(d));
    }
    tensors.push_back(b.getNamedAttr(
        name, b.getDictionaryAttr(
                  {b.getNamedAttr("role", b.getStringAttr(rec.role)),
                   b.getNamedAttr("dtype",
                                  b.getStringAttr(dtypeName(rec.elementType))),
                   b.getNamedAttr("shape", b.getArrayAttr(shape))})));
  }
  SmallVector<Attribute> indexer, cache;
  for (const KernelRecord &k : ctx.kernels) {
    SmallVector<NamedAttribute> grid = {
        b.getNamedAttr("kind", b.getStringAttr(k.gridKind))};
    if (k.gridKind == "persistent")
      grid.push_back(
          b.getNamedAttr("ctas_per_sm", b.getI64IntegerAttr(k.ctasPerSM)));
    if (k.gridKind == "items") {
      grid.push_back(b.getNamedAttr("of", b.getStringAttr(k.itemsOf)));
      grid.push_back(
          b.getNamedAttr("per_cta", b.getI64IntegerAttr(k.perCTA)));
    }
    SmallVector<Attribute> params;
    for (const Param &p : k.params)
      params.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(p.name)),
           b.getNamedAttr("kind",
                          b.getStringAttr(p.isBuffer ? "buffer" : "scalar"))}));
    auto launch = b.getDictionaryAttr(
        {b.getNamedAttr("kernel", b.getStringAttr(k.name)),
         b.getNamedAttr("grid", b.getDictionaryAttr(grid)),
         b.getNamedAttr("block", b.getArrayAttr({b.getI64IntegerAttr(k.threads),
                                                 b.getI64IntegerAttr(1),
                                                 b.getI64IntegerAttr(1)})),
         b.getNamedAttr("shared_bytes", b.getI64IntegerAttr(k.sharedBytes)),
         b.getNamedAttr("params", b.getArrayAttr(params)),
         b.getNamedAttr("reads", strArray(b, k.reads)),
         b.getNamedAttr("writes", strArray(b, k.writes))});
    (k.step == "indexer" ? indexer : cache).push_back(launch);
  }
  SmallVector<NamedAttribute> fields;
  return b.getDictionaryAttr(
      {b.getNamedAttr("version", b.getI64IntegerAttr(1)),
       b.getNamedAttr("flow", b.getStringAttr(ctx.flow.getSymName())),
       b.getNamedAttr("module", b.getStringAttr(ctx.module.getSymName())),
       b.getNamedAttr("config", b.getDictionaryAttr(config)),
       b.getNamedAttr("tensors", b.getDictionaryAttr(tensors)),
       b.getNamedAttr("steps",
                      b.getDictionaryAttr(
                          {b.getNamedAttr("indexer", b.getArrayAttr(indexer)),
                           b.getNamedAttr("cache", b.getArrayAttr(cache))}))});
}

LogicalResult lowerFlow(FlowOp flow, int64_t ctasPerSM, int64_t threads,
                        int64_t itemsPerIteration) {
  ModuleOp module = flow->getParentOfType<ModuleOp>();
  // The kernels widen storage with arith.extf, which LLVM 22's NVVM path
  // cannot do for fp8: refuse early instead of failing in serialization.
  FlowConfigAttr cfg = flow.getConfig();
  for (Type t : {cfg.getKvDtype(), cfg.getIntermediateDtype()})
    if (isa<Float8E4M3FNType, Float8E5M2Type>(t))
      return flow.emitOpError("uses fp8 storage (")
             << t << "), which the GPU code generator does not support yet";
  OpBuilder b(flow);
  MLIRContext *mctx = flow.getContext();
  FlowContext ctx;
  ctx.flow = flow;
  ctx.config = flow.getConfig();
  ctx.ctasPerSM = ctasPerSM;
  ctx.threads = threads;
  ctx.itemsPerIteration = itemsPerIteration;
  ctx.module = gpu::GPUModuleOp::create(
      b, flow.getLoc(), (flow.getSymName() + "_kernels").str());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());

  // Flow tensors.
  auto i32 = IntegerType::get(mctx, 32);
  auto addTensor = [&](StringRef name, StringRef role, Type type,
                       SmallVector<std::string> shape) {
    TensorRecord rec{role.str(), type, std::move(shape)};
    ctx.tensors[name.str()] = rec;
  };
  Block &cache = flow.getCacheBody(), &indexer = flow.getIndexerBody();
  SmallVector<StringRef> names = flow.getCacheTensorNames();
  auto q = cast<VTensorType>(indexer.getArgument(0).getType());
  addTensor("q", "input", q.getElementType(),
            {"rows", std::to_string(q.getD0()), std::to_string(q.getD1())});
  ctx.bufferOf[indexer.getArgument(0)] = "q";
  for (auto [i, name] : llvm::enumerate(names)) {
    auto t = cast<VTensorType>(indexer.getArgument(2 + i).getType());
    addTensor(name, "cache", t.getElementType(),
              {"num_blocks", std::to_string(t.getD0()),
               std::to_string(t.getD1())});
    ctx.bufferOf[indexer.getArgument(2 + i)] = name.str();
    ctx.bufferOf[cache.getArgument(i)] = name.str();
  }
  addTensor("dense_kv_indptr", "input", i32, {"rows+1"});
  addTensor("dense_kv_indices", "input", i32, {"total"});
  addTensor("sparse_kv_indptr", "output", i32, {"rows+1"});
  addTensor("sparse_kv_indices", "output", i32, {"total"});
  addTensor("block_ids", "input", i32, {"num_new"});

  std::string base = flow.getSymName().str();
  unsigned counter = 0;
  for (Operation &op : indexer) {
    std::string suffix = std::to_string(counter++);
    LogicalResult result = success();
    if (isa<TopKOp, ApproxTopKOp>(op)) {
      result = emitTopKKernel(ctx, &op, base + "_indexer_topk");
    } else if (isa<TrtllmTopKOp, UnionOp>(op)) {
      return op.emitOpError("(the trtllm backend's selection) has no GPU "
                            "kernel yet; use vortex.topk");
    } else if (isa<SoftmaxOp, NormalizeOp, Conv1dOp>(op) ||
               (isa<ReductionOpInterface>(op) &&
                cast<ReductionOpInterface>(op).getReducedDim() == 0)) {
      result = emitSegmentKernel(ctx, &op, base + "_indexer_s" + suffix);
    } else {
      result =
          emitIndexerWorkloadKernel(ctx, &op, base + "_indexer_w" + suffix);
    }
    if (failed(result))
      return failure();
  }
  counter = 0;
  for (Operation &op : cache)
    if (failed(emitCacheKernel(ctx, &op,
                               base + "_cache_w" + std::to_string(counter++))))
      return failure();

  module->setAttr("vortex.manifest", buildManifest(b, ctx));
  flow.erase();
  return success();
}

struct ConvertVortexToGPUPass
    : public vortex::impl::ConvertVortexToGPUBase<ConvertVortexToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<FlowOp> flows(getOperation().getOps<FlowOp>());
    if (flows.size() > 1) {
      getOperation().emitError("convert-vortex-to-gpu compiles one flow per "
                               "module (the manifest describes one flow)");
      return signalPassFailure();
    }
    for (FlowOp flow : flows)
      if (failed(lowerFlow(flow, ctasPerSM, threadsPerCTA,
                             itemsPerIteration)))
        return signalPassFailure();
  }
};

} // namespace
