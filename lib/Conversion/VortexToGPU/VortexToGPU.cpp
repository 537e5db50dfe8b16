//===- VortexToGPU.cpp - Flows to GPU kernels and a launch manifest -------===//
//
// Walks each flow body in order: workload kernels, per-row scans and the
// top-k become gpu.func kernels of one gpu.module; the buffers they share
// (flow tensors and f32 scratch) and the launch order become the
// `vortex.manifest` module attribute (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "Selection/Selection.h"
#include "Vortex/Dialect/VortexStageOps.h"
#include "Vortex/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_CONVERTVORTEXTOGPU
#include "Vortex/Conversion/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

/// The save the top-k `op` can store instead of the score kernel: a
/// vortex.save, in the vortex.kernel that yields op's score, of that very
/// value into a [?, 1, 1] paged field that nothing outside the kernel uses.
/// Both store the same value at the same positions (a row that needs
/// selection, [start, end - eos)), but a score kernel that reads and writes
/// back a 2-byte field at random block ids interleaves its loads with the
/// other SMs' stores to the same L2 sectors, about 20 us at B = 64 on an
/// H100, where loads alone or stores alone cost 0 to 2 us
/// (docs/measurements/topk-saves-h100.md). The top-k's stores come after
/// every load of the score kernel.
SaveOp deferrableSave(Operation *op) {
  if (!isa<TopKOp, ApproxTopKOp>(op))
    return {};
  auto score = dyn_cast<OpResult>(op->getOperand(0));
  auto kernel = score ? dyn_cast<KernelOp>(score.getOwner()) : KernelOp();
  if (!kernel)
    return {};
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  Value inner = yield.getValues()[score.getResultNumber()];
  SaveOp found;
  for (Operation *user : inner.getUsers()) {
    auto save = dyn_cast<SaveOp>(user);
    if (!save || save.getValue() != inner)
      continue;
    if (found)
      return {}; // saved twice: leave both where they are
    found = save;
  }
  if (!found)
    return {};
  Value field = found.getField();
  auto type = cast<VTensorType>(field.getType());
  if (!type.isPaged() || type.getInner(1) != 1 || type.getInner(2) != 1)
    return {};
  bool usedOutside = llvm::any_of(field.getUsers(), [&](Operation *u) {
    return !kernel->isAncestor(u);
  });
  int64_t saves = llvm::count_if(field.getUsers(), [](Operation *u) {
    return isa<SaveOp, WriteOp, FillOp>(u);
  });
  // The score must reach no other top-k (each would store it).
  int64_t selections = llvm::count_if(score.getUsers(), [](Operation *u) {
    return isa<TopKOp, ApproxTopKOp, TrtllmTopKOp>(u);
  });
  if (usedOutside || saves != 1 || selections != 1)
    return {};
  return found;
}

/// The attend step's kernels for the flow's shape: q's [T x G, D], the
/// pools' block size and dtypes. Under "auto" a shape the kernels do not
/// support leaves the step out of the manifest (a flow verifies whatever
/// its head_dim; only `on` refuses it, at the flow).
LogicalResult lowerAttend(FlowContext &ctx, StringRef mode) {
  FlowOp flow = ctx.flow;
  if (mode == "off")
    return success();
  Block &indexer = flow.getIndexerBody();
  auto q = cast<VTensorType>(indexer.getArgument(0).getType());
  auto k = cast<VTensorType>(indexer.getArgument(2).getType());
  int64_t g = ctx.config.getGroupSize();
  // A packed int4 pool's k reads as f32 in the IR; its kernels take i4.
  Type kvType = ctx.config.isInt4KV() ? ctx.config.getKvDtype()
                                      : k.getElementType();
  AttendShape shape{k.getD0(), q.getD1(),
                    g,         g > 0 ? q.getD0() / g : 0,
                    kvType,    q.getElementType()};
  if (mode == "auto") {
    // Probe quietly: an unsupported shape is no error here.
    ScopedDiagnosticHandler quiet(flow.getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(checkAttendShape(flow.getLoc(), shape)))
      return success();
  }
  return emitAttendKernels(ctx, flow.getLoc(), shape,
                           (flow.getSymName() + "_attend").str());
}

LogicalResult lowerFlow(FlowOp flow,
                        const ConvertVortexToGPUOptions &options) {
  ModuleOp module = flow->getParentOfType<ModuleOp>();
  // fp8 k and v are widened from their bits (Gen::toF32). Storing in fp8
  // (fields or scratch of an fp8 intermediate dtype) would need arith.truncf
  // to fp8, which LLVM 22's NVVM path cannot serialize: refuse it early
  // instead of failing in serialization.
  FlowConfigAttr cfg = flow.getConfig();
  if (isa<Float8E4M3FNType, Float8E5M2Type>(cfg.getIntermediateDtype()))
    return flow.emitOpError("stores its intermediates in fp8 (")
           << cfg.getIntermediateDtype()
           << "), which the GPU code generator does not support yet; fp8 "
              "is supported for k and v (kv_dtype)";
  OpBuilder b(flow);
  FlowContext ctx;
  ctx.flow = flow;
  ctx.config = flow.getConfig();
  ctx.options = options;
  ctx.module = gpu::GPUModuleOp::create(
      b, flow.getLoc(), (flow.getSymName() + "_kernels").str());
  if (!options.planOnly)
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());

  // Flow tensors: the ABI's; values in flow buffers are known by name.
  ctx.abi = abi::FlowABI::get(flow, abi::Storage::FlowDtypes);
  Block &cache = flow.getCacheBody(), &indexer = flow.getIndexerBody();
  ctx.bufferOf[indexer.getArgument(0)] = abi::kQuery.str();
  SmallVector<StringRef> names = flow.getCacheTensorNames();
  llvm::append_range(names, flow.getParamNames());
  for (auto [i, name] : llvm::enumerate(names)) {
    ctx.bufferOf[indexer.getArgument(2 + i)] = name.str();
    ctx.bufferOf[cache.getArgument(i)] = name.str();
  }

  // A stage of a step split around custom ops: an import is read from its
  // buffer; an export is stored by the kernel computing it, into its
  // buffer (docs/python.md, "Custom ops").
  for (Operation &op : indexer) {
    if (auto in = dyn_cast<StageInOp>(op)) {
      ctx.bufferOf[in.getResult()] = in.getName().str();
      continue;
    }
    auto out = dyn_cast<StageOutOp>(op);
    if (!out)
      continue;
    Operation *def = out.getValue().getDefiningOp();
    if (!def || isa<StageInOp>(def))
      return out.emitOpError("exports a value no kernel of its stage "
                             "computes (an argument or an import); the GPU "
                             "back end stores an export from its kernel");
    auto [it, fresh] =
        ctx.bufferOf.try_emplace(out.getValue(), out.getName().str());
    if (!fresh)
      return out.emitOpError("exports a value already stored as '")
             << it->second << "'; the GPU back end stores a value once";
  }

  if (ctx.options.topkSavesMinRows >= 0)
    for (Operation &op : indexer)
      if (SaveOp save = deferrableSave(&op))
        ctx.deferredSaves[&op] = save;

  // plan-only: a workload kernel's plan instead of the kernel.
  auto workload = [&](Operation *op, const std::string &name,
                      bool indexerSide) {
    if (options.planOnly)
      return reportWorkloadPlan(ctx, op, name, indexerSide);
    return indexerSide ? emitIndexerWorkloadKernel(ctx, op, name)
                       : emitCacheKernel(ctx, op, name);
  };
  std::string base = flow.getSymName().str();
  unsigned counter = 0;
  for (Operation &op : indexer) {
    if (isa<StageInOp, StageOutOp>(op))
      continue; // buffers, bound above
    std::string suffix = std::to_string(counter++);
    LogicalResult result = success();
    if (isa<TopKOp, ApproxTopKOp>(op)) {
      result = emitTopKKernel(ctx, &op, base + "_indexer_topk");
    } else if (isa<TrtllmTopKOp>(op)) {
      result = emitTopKKernel(ctx, &op, base + "_indexer_trtllm" + suffix);
    } else if (auto u = dyn_cast<UnionOp>(op)) {
      result = emitUnionKernels(ctx, u, base + "_indexer_union" + suffix);
    } else if (isStreamedGemm(&op)) {
      result = emitStreamedGemmKernel(ctx, cast<GeMMOp>(op),
                                      base + "_indexer_g" + suffix);
    } else if (isCopiedReshape(&op)) {
      result = emitReshapeKernel(ctx, cast<ReshapeOp>(op),
                                 base + "_indexer_r" + suffix);
    } else if (isa<SoftmaxOp, NormalizeOp, Conv1dOp>(op) ||
               (isa<ReductionOpInterface>(op) &&
                cast<ReductionOpInterface>(op).getReducedDim() == 0)) {
      result = emitSegmentKernel(ctx, &op, base + "_indexer_s" + suffix);
    } else {
      result = workload(&op, base + "_indexer_w" + suffix, true);
    }
    if (failed(result))
      return failure();
  }
  counter = 0;
  for (Operation &op : cache) {
    std::string suffix = std::to_string(counter++);
    if (auto ld = dyn_cast<LearnedDescriptorOp>(op)) {
      // Plan-only reports workload plans; this kernel has none.
      if (!options.planOnly &&
          failed(emitLearnedDescriptorKernel(ctx, ld, base + "_cache_d" +
                                                          suffix)))
        return failure();
      continue;
    }
    if (failed(workload(&op, base + "_cache_w" + suffix, false)))
      return failure();
  }
  if (options.planOnly) {
    // The plans were the output: the other kernels go, the flow stays.
    ctx.module.erase();
    return success();
  }

  if (failed(lowerAttend(ctx, options.attend)))
    return failure();

  module->setAttr(abi::kManifestAttrName, ctx.abi.toManifest(b, "cuda"));
  flow.erase();
  return success();
}

struct ConvertVortexToGPUPass
    : public vortex::impl::ConvertVortexToGPUBase<ConvertVortexToGPUPass> {
  using Base::Base;
  /// The pass's options as the generated struct the kernels read. Copied
  /// one by one: MLIR 22's generated base builds its options from that
  /// struct but has no way back (no getter, and Pass::Option members only).
  ConvertVortexToGPUOptions options() const {
    ConvertVortexToGPUOptions o;
    o.ctasPerSM = ctasPerSM;
    o.threadsPerCTA = threadsPerCTA;
    o.itemsPerIteration = itemsPerIteration;
    o.lanes = lanes;
    o.hoist = hoist;
    o.topkCtasPerSM = topkCtasPerSM;
    o.topkThreads = topkThreads;
    o.topkValueBins = topkValueBins;
    o.topkSavesMinRows = topkSavesMinRows;
    o.envelopeIdentity = envelopeIdentity;
    o.streamingLoads = streamingLoads;
    o.sectorSlices = sectorSlices;
    o.envelopeMMA = envelopeMMA;
    o.attendMMA = attendMMA;
    o.attend = attend;
    o.planOnly = planOnly;
    return o;
  }
  /// The options' bounds (docs/contract.md, "Bounds"): what the kernels can
  /// be built with. Checked first: an absurd value would otherwise overflow
  /// the generator's register-budget arithmetic.
  LogicalResult checkOptions() {
    auto bad = [&](StringRef name, int64_t value, StringRef what) {
      return getOperation().emitError("convert-vortex-to-gpu: ")
             << name << " = " << value << " must be " << what;
    };
    if (threadsPerCTA < 32 || threadsPerCTA > 1024 || threadsPerCTA % 32)
      return bad("threads", threadsPerCTA,
                 "a multiple of 32 (a warp) in [32, 1024]");
    if (ctasPerSM < 1 || ctasPerSM > 32)
      return bad("ctas-per-sm", ctasPerSM, "in [1, 32]");
    if (itemsPerIteration < 1 || itemsPerIteration > 16)
      return bad("items-per-iteration", itemsPerIteration, "in [1, 16]");
    if (lanes != 0 && (lanes > 32 || !llvm::isPowerOf2_64(lanes)))
      return bad("lanes", lanes, "0 (planned) or a power of two in [1, 32]");
    if (topkCtasPerSM < 0 || topkCtasPerSM > 8)
      return bad("topk-ctas-per-sm", topkCtasPerSM,
                 "in [0, 8] (0: no bound; 8 CTAs of the top-k's 256 threads "
                 "leave 32 registers a thread)");
    if (!isTopKSavesMinRowsOption(topkSavesMinRows))
      return bad("topk-saves-min-rows", topkSavesMinRows,
                 "-1 (never) or a row count in [0, 2^30]");
    if (attend != "auto" && attend != "on" && attend != "off")
      return getOperation().emitError("convert-vortex-to-gpu: attend = ")
             << attend << " must be auto, on or off";
    if (!isTopKThreadsOption(topkThreads))
      return bad("topk-threads", topkThreads, "0 (planned), 128, 256 or 512");
    return success();
  }

  void runOnOperation() override {
    if (failed(checkOptions()))
      return signalPassFailure();
    SmallVector<FlowOp> flows(getOperation().getOps<FlowOp>());
    if (flows.size() > 1) {
      getOperation().emitError("convert-vortex-to-gpu compiles one flow per "
                               "module (the manifest describes one flow)");
      return signalPassFailure();
    }
    ConvertVortexToGPUOptions options = this->options();
    for (FlowOp flow : flows)
      if (failed(lowerFlow(flow, options)))
        return signalPassFailure();
  }
};

} // namespace
