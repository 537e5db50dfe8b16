//===- FlowToFunc.cpp - Flows to step functions, kernels inlined ----------===//
//
// `vortex.flow @F` becomes `@F_indexer`, `@F_cache` and `@F_attend` with the
// ABI's memref arguments (docs/contract.md). The first two start with the
// flow's domain (the CSR and block ids as tensors, the ragged extent, the row
// count and each position's row), marked for the op patterns, and bind the
// flow's arguments to tensors of their converted types; the flow's ops are
// then inlined and converted by the family patterns. `vortex.kernel` groups
// are inlined: on linalg, fusion is the job of the linalg passes. `@F_attend`
// holds one vortex.attend, which depends on the config only.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"
#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Dialect/VortexStageOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

static MemRefType memrefOf(VTensorType t) {
  if (t.isSlotted())
    t = t.withFormat(Format::Paged);
  return MemRefType::get(t.getShape(), loweredElementType(t));
}

/// A packed int4 pool's bytes `[?, bs, D / 2]` (i8) and its scales, the
/// last two step arguments (docs/contract.md "INT4 KV").
static MemRefType int4PoolType(FlowConfigAttr c) {
  return MemRefType::get({ShapedType::kDynamic, c.getBlockSize(),
                          c.getHeadDim() / 2},
                         IntegerType::get(c.getContext(), 8));
}
static void appendInt4ScaleTypes(FlowConfigAttr c,
                                 SmallVectorImpl<Type> &types) {
  auto f32 = Float32Type::get(c.getContext());
  types.push_back(
      MemRefType::get({ShapedType::kDynamic, 1, c.getHeadDim()}, f32));
  types.push_back(
      MemRefType::get({ShapedType::kDynamic, c.getBlockSize(), 1}, f32));
}

namespace {

/// Builds one step function and binds the flow's arguments in it.
class StepBuilder {
public:
  StepBuilder(ConversionPatternRewriter &rewriter, const TypeConverter &tc,
              FlowOp flow, StringRef suffix, ArrayRef<Type> argTypes,
              ArrayRef<std::string> argNames)
      : rewriter(rewriter), tc(tc), loc(flow.getLoc()) {
    auto type = rewriter.getFunctionType(argTypes, {});
    func = func::FuncOp::create(rewriter, loc,
                                (flow.getSymName() + suffix).str(), type);
    func->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
    func->setAttr(kConfigMarker, flow.getConfig());
    for (auto [i, name] : llvm::enumerate(argNames))
      func.setArgAttr(i, "vortex.name", rewriter.getStringAttr(name));
    Block *entry = func.addEntryBlock();
    rewriter.setInsertionPointToStart(entry);
  }

  /// Argument `i` as a tensor (writable for fields and outputs).
  Value tensorOf(unsigned i, bool writable) {
    Value memref = func.getArgument(i);
    auto type = cast<MemRefType>(memref.getType());
    return bufferization::ToTensorOp::create(
        rewriter, loc,
        RankedTensorType::get(type.getShape(), type.getElementType()), memref,
        /*restrict=*/true, writable);
  }

  /// Marks `v` as the domain value `role`.
  Value mark(Value v, StringRef role) {
    v.getDefiningOp()->setAttr(kDomainMarker, rewriter.getStringAttr(role));
    return v;
  }

  /// The flow argument `arg` bound to step argument `i`: its tensor at the
  /// converted type (padded lanes 0).
  Value bind(BlockArgument arg, unsigned i, bool writable) {
    Value t = tensorOf(i, writable);
    auto want = cast<RankedTensorType>(tc.convertType(arg.getType()));
    auto have = cast<RankedTensorType>(t.getType());
    if (have.getShape().drop_front() != want.getShape().drop_front()) {
      LinalgBuilder lb(rewriter, loc, std::nullopt, Value());
      t = lb.padTo(t, want.getDimSize(1), want.getDimSize(2));
    }
    if (t.getType() != want)
      t = tensor::CastOp::create(rewriter, loc, want, t);
    t.getDefiningOp()->setAttr(kBindsMarker, rewriter.getIndexAttr(i));
    return t;
  }

  /// Packed int4 pool `arg` (k or v) of step argument `i`: its dequantized
  /// values, whose reads unpack the bytes where they load (kInt4Marker).
  Value bindInt4(BlockArgument arg, unsigned i, StringRef pool,
                 unsigned scaleArg) {
    Value packed = tensorOf(i, false), scale = tensorOf(scaleArg, false);
    auto want = cast<RankedTensorType>(tc.convertType(arg.getType()));
    LinalgBuilder lb(rewriter, loc, std::nullopt, Value());
    Value t = lb.generate(lb.e.dim(packed, 0), want.getDimSize(1),
                          want.getDimSize(2),
                          [&](Emitter &x, Value s, Value r, Value c) {
                            return dequantInt4(x.b, x.loc, packed, scale,
                                               pool == "v", s, r, c);
                          });
    if (t.getType() != want)
      t = tensor::CastOp::create(rewriter, loc, want, t);
    t.getDefiningOp()->setAttr(kInt4Marker, rewriter.getStringAttr(pool));
    return t;
  }

  /// Inlines `body` with `bindings` for its arguments and terminates.
  void finish(Block &body, ArrayRef<Value> bindings) {
    Block *entry = &func.front();
    rewriter.inlineBlockBefore(&body, entry, entry->end(), bindings);
    rewriter.setInsertionPointToEnd(entry);
    func::ReturnOp::create(rewriter, loc);
  }

  ConversionPatternRewriter &rewriter;
  const TypeConverter &tc;
  Location loc;
  func::FuncOp func;
};

struct FlowToFuncs : OpConversionPattern<FlowOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(FlowOp flow, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    abi::FlowABI abi = abi::FlowABI::get(flow, abi::Storage::F32);
    rewriter.setInsertionPoint(flow);
    buildIndexer(rewriter, flow, abi);
    rewriter.setInsertionPoint(flow);
    buildCache(rewriter, flow, abi);
    rewriter.setInsertionPoint(flow);
    buildAttend(rewriter, flow, abi);
    rewriter.eraseOp(flow);
    return success();
  }

  /// `(q, k, v, fields..., params..., dense CSR, sparse CSR)`; `o` stands
  /// for the sparse indices.
  void buildIndexer(ConversionPatternRewriter &rewriter, FlowOp flow,
                    const abi::FlowABI &abi) const {
    Block &body = flow.getIndexerBody();
    ArrayRef<std::string> names = abi.args(abi::Step::Indexer);
    size_t numCache = flow.getCacheTensorNames().size();
    size_t numParams = flow.getParamNames().size();
    FlowConfigAttr c = flow.getConfig();
    bool int4 = c.isInt4KV();
    SmallVector<Type> argTypes = {
        memrefOf(cast<VTensorType>(body.getArgument(0).getType()))};
    for (size_t i = 0; i < numCache + numParams; ++i)
      argTypes.push_back(
          int4 && i < 2
              ? int4PoolType(c)
              : memrefOf(cast<VTensorType>(body.getArgument(2 + i).getType())));
    // The CSRs (1-D), then a stage's imports and exports ([?, d0, d1]),
    // then an int4 pool's scales.
    while (argTypes.size() < names.size() - (int4 ? 2 : 0)) {
      const abi::TensorRecord &rec = abi.tensors.at(names[argTypes.size()]);
      SmallVector<int64_t> shape = {ShapedType::kDynamic};
      for (const std::string &d : ArrayRef(rec.shape).drop_front()) {
        int64_t v = 0;
        StringRef(d).getAsInteger(10, v);
        shape.push_back(v);
      }
      argTypes.push_back(MemRefType::get(shape, rec.elementType));
    }
    if (int4)
      appendInt4ScaleTypes(c, argTypes);
    StepBuilder sb(rewriter, *getTypeConverter(), flow, "_indexer", argTypes,
                   names);
    Emitter e{rewriter, sb.loc};
    unsigned csr = 1 + numCache + numParams;
    Value indptr = sb.mark(sb.tensorOf(csr, false), "indptr");
    Value blockIds = sb.mark(sb.tensorOf(csr + 1, false), "block_ids");
    // The sparse CSR's values at the start of the step: the selections'
    // state (currentState) until one writes them.
    Value sparseIndices = sb.tensorOf(csr + 3, true);
    sb.tensorOf(csr + 2, true);
    sb.mark(e.dim(blockIds, 0), "ragged_extent");
    Value numRows =
        sb.mark(e.sub(e.dim(indptr, 0), e.idx(1)), "num_rows");
    sb.mark(rowOf(e, indptr, blockIds, numRows), "row_of");

    SmallVector<Value> bindings = {sb.bind(body.getArgument(0), 0, false)};
    auto oType = cast<RankedTensorType>(
        getTypeConverter()->convertType(body.getArgument(1).getType()));
    bindings.push_back(tensor::ExpandShapeOp::create(
        rewriter, sb.loc, oType, sparseIndices,
        ArrayRef<ReassociationIndices>{{0, 1, 2}}));
    for (size_t i = 0; i < numCache + numParams; ++i)
      bindings.push_back(
          int4 && i < 2
              ? sb.bindInt4(body.getArgument(2 + i), 1 + i, i ? "v" : "k",
                            names.size() - 2 + i)
              : sb.bind(body.getArgument(2 + i), 1 + i,
                        /*writable=*/i >= 2 && i < numCache));
    sb.finish(body, bindings);
  }

  /// rowOf[s] = the CSR row owning ragged position s.
  static Value rowOf(Emitter &e, Value indptr, Value blockIds, Value numRows) {
    Value init = tensor::EmptyOp::create(
        e.b, e.loc, ArrayRef<int64_t>{ShapedType::kDynamic},
        e.b.getIndexType(), ValueRange{e.dim(blockIds, 0)});
    return e
        .forLoop(e.idx(0), numRows, {init},
                 [&](Emitter &x, Value r, ValueRange acc) {
                   Value start = x.toIndex(x.extract(indptr, r));
                   Value end =
                       x.toIndex(x.extract(indptr, x.add(r, x.idx(1))));
                   return SmallVector<Value>{
                       x.forLoop(start, end, {acc[0]},
                                 [&](Emitter &y, Value s, ValueRange inner) {
                                   return SmallVector<Value>{
                                       tensor::InsertOp::create(
                                           y.b, y.loc, r, inner[0],
                                           ValueRange{s})};
                                 })
                           .getResult(0)};
                 })
        .getResult(0);
  }

  /// `(q, k, v, kv_indptr, kv_indices, kv_last_len, o, lse, sm_scale[,
  /// k_int4_scale, v_int4_scale])`: one
  /// vortex.attend (its own pattern lowers it) whose results are written
  /// into o and lse. Its code depends on the config and q's type only.
  void buildAttend(ConversionPatternRewriter &rewriter, FlowOp flow,
                   const abi::FlowABI &abi) const {
    ArrayRef<std::string> names = abi.args(abi::Step::Attend);
    SmallVector<Type> argTypes;
    for (const std::string &name : names) {
      SmallVector<int64_t> shape;
      for (const std::string &d : abi.tensors.at(name).shape) {
        int64_t v;
        shape.push_back(StringRef(d).getAsInteger(10, v) ? ShapedType::kDynamic
                                                         : v);
      }
      argTypes.push_back(MemRefType::get(shape, abi.elementType(name)));
    }
    StepBuilder sb(rewriter, *getTypeConverter(), flow, "_attend", argTypes,
                   names);
    func::FuncOp func = sb.func;
    SmallVector<Value> in;
    for (unsigned i = 0; i < 6; ++i)
      in.push_back(sb.tensorOf(i, /*writable=*/false));
    Value scale = tensor::ExtractOp::create(
        rewriter, sb.loc, sb.tensorOf(8, false),
        ValueRange{arith::ConstantIndexOp::create(rewriter, sb.loc, 0)});
    auto tensorType = [&](unsigned i) {
      auto m = cast<MemRefType>(argTypes[i]);
      return RankedTensorType::get(m.getShape(), m.getElementType());
    };
    // A packed int4 pool's scales are the last two arguments.
    bool int4 = flow.getConfig().isInt4KV();
    Value kScale = int4 ? sb.tensorOf(9, false) : Value();
    Value vScale = int4 ? sb.tensorOf(10, false) : Value();
    auto attend = AttendOp::create(
        rewriter, sb.loc, tensorType(6), tensorType(7), in[0], in[1], in[2],
        in[3], in[4], in[5], scale, kScale, vScale,
        flow.getConfig().getGroupSize());
    for (auto [result, arg] : {std::pair<Value, unsigned>{attend.getO(), 6},
                               {attend.getLse(), 7}})
      bufferization::MaterializeInDestinationOp::create(
          rewriter, sb.loc, TypeRange{}, result, func.getArgument(arg),
          /*restrict=*/true, /*writable=*/true);
    func::ReturnOp::create(rewriter, sb.loc);
  }

  /// `(k, v, fields..., params..., block_ids[, slot_of_ptr])`.
  void buildCache(ConversionPatternRewriter &rewriter, FlowOp flow,
                  const abi::FlowABI &abi) const {
    Block &body = flow.getCacheBody();
    FlowConfigAttr c = flow.getConfig();
    bool int4 = c.isInt4KV();
    SmallVector<Type> argTypes;
    for (BlockArgument arg : body.getArguments())
      argTypes.push_back(int4 && arg.getArgNumber() < 2
                             ? int4PoolType(c)
                             : memrefOf(cast<VTensorType>(arg.getType())));
    bool slotted = !abi.slotsDefinedBy.empty();
    for (StringRef name : {abi::kBlockIds, abi::kSlotOfPtr})
      if (name == abi::kBlockIds || slotted)
        argTypes.push_back(MemRefType::get({ShapedType::kDynamic},
                                           abi.elementType(name)));
    if (int4)
      appendInt4ScaleTypes(c, argTypes);
    StepBuilder sb(rewriter, *getTypeConverter(), flow, "_cache", argTypes,
                   abi.args(abi::Step::Cache));
    Emitter e{rewriter, sb.loc};
    size_t numArgs = body.getNumArguments();
    size_t numCache = flow.getCacheTensorNames().size();
    Value blockIds = sb.mark(sb.tensorOf(numArgs, false), "block_ids");
    Value numNew = sb.mark(e.dim(blockIds, 0), "ragged_extent");
    if (slotted) {
      // slot_ids[s] = slot_of_ptr[block_ids[s]] (block ids are validated).
      Value slotOfPtr = sb.tensorOf(numArgs + 1, false);
      Value init = tensor::EmptyOp::create(
          rewriter, sb.loc, ArrayRef<int64_t>{ShapedType::kDynamic},
          rewriter.getI32Type(), ValueRange{numNew});
      Value slotIds =
          e.forLoop(e.idx(0), numNew, {init},
                    [&](Emitter &x, Value s, ValueRange acc) {
                      Value block = x.toIndex(x.extract(blockIds, s));
                      Value slot = x.extract(slotOfPtr, block);
                      return SmallVector<Value>{tensor::InsertOp::create(
                          x.b, x.loc, slot, acc[0], ValueRange{s})};
                    })
              .getResult(0);
      sb.mark(slotIds, "slot_ids");
    }
    SmallVector<Value> bindings;
    // The fields are writable; k, v and the parameters are read-only.
    size_t firstScale = argTypes.size() - 2;
    for (size_t i = 0; i < numArgs; ++i)
      bindings.push_back(int4 && i < 2
                             ? sb.bindInt4(body.getArgument(i), i,
                                           i ? "v" : "k", firstScale + i)
                             : sb.bind(body.getArgument(i), i,
                                       i >= 2 && i < numCache));
    sb.finish(body, bindings);
  }
};

/// The kernel's ops move in front of it; its results are the yielded values.
struct KernelToInline : OpConversionPattern<KernelOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KernelOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    SmallVector<Value> results(yield.getValues());
    rewriter.eraseOp(yield);
    rewriter.inlineBlockBefore(&body, op);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// The step function argument named `name` (the ABI's vortex.name).
static Value stageArgument(Operation *op, StringRef name) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func)
    return Value();
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto n = func.getArgAttrOfType<StringAttr>(i, "vortex.name");
        n && n.getValue() == name)
      return func.getArgument(i);
  return Value();
}

/// A stage's import: its argument as a tensor.
struct StageInToTensor : OpConversionPattern<StageInOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StageInOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value memref = stageArgument(op, op.getName());
    if (!memref)
      return rewriter.notifyMatchFailure(op, "no step argument of its name");
    auto type = cast<MemRefType>(memref.getType());
    Value t = bufferization::ToTensorOp::create(
        rewriter, op.getLoc(),
        RankedTensorType::get(type.getShape(), type.getElementType()), memref,
        /*restrict=*/true, /*writable=*/false);
    Type want = getTypeConverter()->convertType(op.getResult().getType());
    if (t.getType() != want)
      t = tensor::CastOp::create(rewriter, op.getLoc(), want, t);
    rewriter.replaceOp(op, t);
    return success();
  }
};

/// A stage's export: its value written into its argument.
struct StageOutToMemref : OpConversionPattern<StageOutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StageOutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value memref = stageArgument(op, op.getName());
    if (!memref)
      return rewriter.notifyMatchFailure(op, "no step argument of its name");
    auto type = cast<MemRefType>(memref.getType());
    Value v = adaptor.getValue();
    auto want = RankedTensorType::get(type.getShape(), type.getElementType());
    if (v.getType() != want)
      v = tensor::CastOp::create(rewriter, op.getLoc(), want, v);
    bufferization::MaterializeInDestinationOp::create(
        rewriter, op.getLoc(), TypeRange{}, v, memref, /*restrict=*/true,
        /*writable=*/true);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::vortex::populateVortexFlowToFuncPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<FlowToFuncs, KernelToInline, StageInToTensor, StageOutToMemref>(
      converter, patterns.getContext());
}
