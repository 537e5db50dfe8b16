//===- FlowOp.cpp - The vortex.flow op ------------------------------------===//
//
// vortex.flow: its accessors, its custom assembly (the fields and
// parameters lists, the two bodies) and the flow rules its verifier adds to
// the ops' own (docs/design.md, "The IR").
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Dialect/VortexStageOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::vortex;

SmallVector<StringRef> FlowOp::getCacheTensorNames() {
  SmallVector<StringRef> names = {"k", "v"};
  for (Attribute a : getFields())
    names.push_back(cast<FieldAttr>(a).getName().getValue());
  return names;
}

SmallVector<FieldAttr> FlowOp::getParamDecls() {
  SmallVector<FieldAttr> params;
  if (ArrayAttr attr = getParamsAttr())
    for (Attribute a : attr)
      params.push_back(cast<FieldAttr>(a));
  return params;
}

SmallVector<StringRef> FlowOp::getParamNames() {
  SmallVector<StringRef> names;
  for (FieldAttr p : getParamDecls())
    names.push_back(p.getName().getValue());
  return names;
}

/// Body argument names in order: (q, o on the indexer side), k, v, the
/// fields, the parameters.
static SmallVector<StringRef> bodyArgumentNames(FlowOp flow, bool indexer) {
  SmallVector<StringRef> names;
  if (indexer)
    names = {"q", "o"};
  llvm::append_range(names, flow.getCacheTensorNames());
  llvm::append_range(names, flow.getParamNames());
  return names;
}

StringRef FlowOp::getArgumentName(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner()->getParentOp() != getOperation())
    return {};
  bool indexer = arg.getOwner()->getParent() == &getIndexer();
  SmallVector<StringRef> names = bodyArgumentNames(*this, indexer);
  return arg.getArgNumber() < names.size() ? names[arg.getArgNumber()]
                                           : StringRef();
}

VTensorType FlowOp::getKVType() {
  FlowConfigAttr c = getConfig();
  return VTensorType::get(
      {ShapedType::kDynamic, c.getBlockSize(), c.getHeadDim()},
      c.isInt4KV() ? Float32Type::get(getContext()) : c.getKvDtype(),
      Format::Paged);
}

VTensorType FlowOp::getQueryType(Type elementType, int64_t tokens) {
  FlowConfigAttr c = getConfig();
  return VTensorType::get(
      {ShapedType::kDynamic, tokens * c.getGroupSize(), c.getHeadDim()},
      elementType, Format::Batched);
}

int64_t FlowOp::getQueryTokens() {
  auto q = cast<VTensorType>(getIndexerBody().getArgument(0).getType());
  return std::max<int64_t>(q.getD0() / getConfig().getGroupSize(), 1);
}

VTensorType FlowOp::getOutputType() {
  return VTensorType::get({ShapedType::kDynamic, 1, 1},
                          IntegerType::get(getContext(), 32), Format::Ragged);
}

VTensorType FlowOp::getFieldType(FieldAttr field) {
  return VTensorType::get({ShapedType::kDynamic, field.getRows(),
                           field.getCols()},
                          getConfig().getIntermediateDtype(), Format::Paged);
}

VTensorType FlowOp::getParamType(FieldAttr param) {
  return VTensorType::get({1, param.getRows(), param.getCols()},
                          getConfig().getIntermediateDtype(),
                          Format::Parameter);
}

Operation *FlowOp::getSelectionOp() {
  for (Operation &op : getIndexerBody())
    if (isa<TopKOp, ApproxTopKOp, UnionOp>(op))
      return &op;
  return nullptr;
}

void FlowOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setNameFn) {
  if (region.empty())
    return;
  SmallVector<StringRef> names =
      bodyArgumentNames(*this, &region == &getIndexer());
  for (auto [arg, name] : llvm::zip(region.getArguments(), names))
    setNameFn(arg, name);
}

/// `(name = [r, c], ...)`: the list of `fields(...)` or `params(...)`.
static ParseResult parseDeclList(OpAsmParser &parser, bool isParam,
                                 SmallVectorImpl<Attribute> &decls) {
  MLIRContext *ctx = parser.getContext();
  return parser.parseCommaSeparatedList(
      OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
        std::string name;
        int64_t rows, cols;
        llvm::SMLoc loc = parser.getCurrentLocation();
        if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
            parser.parseLSquare() || parser.parseInteger(rows) ||
            parser.parseComma() || parser.parseInteger(cols) ||
            parser.parseRSquare())
          return failure();
        if (isParam && name.empty())
          return parser.emitError(loc, "parameter needs a non-empty name");
        if (isParam && (rows <= 0 || cols <= 0 || rows > kMaxInnerExtent ||
                        cols > kMaxInnerExtent))
          return parser.emitError(loc, "parameter '")
                 << name << "' must have an [r, c] shape in [1, "
                 << kMaxInnerExtent << "], got [" << rows << ", " << cols
                 << "]";
        if (isParam && !fitsStreamed(rows, cols))
          return parser.emitError(loc, "parameter '")
                 << name << "' [" << rows << ", " << cols
                 << "] must have at most " << kMaxStreamedElements
                 << " elements (padded to powers of two)";
        auto emitError = [&]() { return parser.emitError(loc); };
        FieldAttr decl = FieldAttr::getChecked(
            emitError, ctx, StringAttr::get(ctx, name), rows, cols);
        if (!decl)
          return failure();
        decls.push_back(decl);
        return success();
      });
}

static void printDeclList(OpAsmPrinter &p, ArrayAttr decls) {
  p << "(";
  llvm::interleaveComma(decls, p, [&](Attribute a) {
    auto f = cast<FieldAttr>(a);
    p.printKeywordOrString(f.getName().getValue());
    p << " = [" << f.getRows() << ", " << f.getCols() << "]";
  });
  p << ")";
}

// vortex.flow @name config = #vortex.config<...> fields(a = [r, c], ...)
//     [params(w = [r, c], ...)]
//     cache(%k: T, ...) { ... } indexer(%q: T, ...) { ... } [attributes {...}]
ParseResult FlowOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr symName;
  FlowConfigAttr config;
  if (parser.parseSymbolName(symName) || parser.parseKeyword("config") ||
      parser.parseEqual() || parser.parseAttribute(config) ||
      parser.parseKeyword("fields"))
    return failure();
  MLIRContext *ctx = parser.getContext();
  SmallVector<Attribute> fields, params;
  if (parseDeclList(parser, /*isParam=*/false, fields))
    return failure();
  if (succeeded(parser.parseOptionalKeyword("params")) &&
      parseDeclList(parser, /*isParam=*/true, params))
    return failure();
  result.addAttribute(getSymNameAttrName(result.name), symName);
  result.addAttribute(getConfigAttrName(result.name), config);
  result.addAttribute(getFieldsAttrName(result.name),
                      ArrayAttr::get(ctx, fields));
  // No parameters: no attribute, so such a flow prints as it always did.
  if (!params.empty())
    result.addAttribute(getParamsAttrName(result.name),
                        ArrayAttr::get(ctx, params));

  for (StringRef keyword : {"cache", "indexer"}) {
    SmallVector<OpAsmParser::Argument> args;
    Region *region = result.addRegion();
    if (parser.parseKeyword(keyword) ||
        parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren,
                                 /*allowType=*/true) ||
        parser.parseRegion(*region, args))
      return failure();
    if (region->empty())
      region->emplaceBlock();
  }
  return parser.parseOptionalAttrDictWithKeyword(result.attributes);
}

void FlowOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << " config = ";
  p.printAttribute(getConfig());
  p << " fields";
  printDeclList(p, getFields());
  if (ArrayAttr params = getParamsAttr(); params && !params.empty()) {
    p << " params";
    printDeclList(p, params);
  }
  auto printBody = [&](StringRef keyword, Region &region) {
    p.printNewline();
    p << keyword << "(";
    llvm::interleaveComma(region.getArguments(), p,
                          [&](BlockArgument a) { p.printRegionArgument(a); });
    p << ") ";
    p.printRegion(region, /*printEntryBlockArgs=*/false,
                  /*printBlockTerminators=*/false);
  };
  printBody("cache", getCache());
  printBody("indexer", getIndexer());
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getSymNameAttrName(), getConfigAttrName(), getFieldsAttrName(),
       getParamsAttrName()});
}

namespace {
/// Which side of a flow an op runs on, for the side-specific rules.
enum class Side { Cache, Indexer };
} // namespace

static LogicalResult verifyArgType(FlowOp flow, BlockArgument arg,
                                   StringRef name, VTensorType expected,
                                   bool allowSlotted) {
  auto actual = dyn_cast<VTensorType>(arg.getType());
  if (actual && allowSlotted && actual.isSlotted())
    actual = actual.withFormat(Format::Paged);
  // Explicit padding (made by the padding pass) does not change the type.
  if (actual && actual.withExplicitPadding(false) == expected)
    return success();
  return flow.emitOpError("argument '")
         << name << "' must have type " << expected << ", got "
         << arg.getType();
}

/// A learned descriptor's kernel reads a pool at the block's id while other
/// CTAs write the field, so its block is k or v (MLA's latent is k), never
/// a field; it writes every completed block, so no slotted field may mark
/// blocks that write nothing (docs/contract.md, "Slotted fields").
static LogicalResult verifyLearnedDescriptor(FlowOp flow, Block &body,
                                             LearnedDescriptorOp op) {
  if (flow.getConfig().isInt4KV())
    return op.emitOpError("reads a packed int4 pool; learned descriptors "
                          "read bf16, f16, f32 or fp8 pools");
  auto block = dyn_cast<BlockArgument>(op.getBlock());
  if (!block || block.getOwner() != &body || block.getArgNumber() > 1)
    return op.emitOpError("must read the block from a pool (k or v; an MLA "
                          "flow's latent is k), not a field");
  if (llvm::any_of(body.getArguments(), [](BlockArgument arg) {
        return cast<VTensorType>(arg.getType()).isSlotted();
      }))
    return op.emitOpError("is not supported in a flow with slotted fields "
                          "(its kernel writes every completed block; a slot "
                          "< 0 writes nothing)");
  return success();
}

static LogicalResult verifySideOps(FlowOp flow, Block &body, Side side) {
  Type intermediate = flow.getConfig().getIntermediateDtype();
  StringRef sideName = side == Side::Cache ? "cache" : "indexer";
  // Ops nested in fused kernels follow the same rules.
  SmallVector<Operation *> nested;
  body.walk([&](Operation *op) { nested.push_back(op); });
  for (Operation *opPtr : nested) {
    Operation &op = *opPtr;
    // Unregistered ops have no dialect.
    if (!isa_and_nonnull<VortexDialect>(op.getDialect()))
      return op.emitOpError("is not a vortex op; a flow body holds only "
                            "vortex ops");
    // A writer stores into the field's storage: a computed value of a
    // field's type (a masked copy) has none.
    if (Value field = getWrittenField(&op);
        field && !isa<BlockArgument>(field))
      return op.emitOpError("writes a computed value; it must write a field "
                            "of the flow (an argument of the ")
             << sideName << " body)";
    if (side == Side::Cache) {
      // vortex_torch.cache exports no Sum, GeMV, Transpose or Kron
      // (reference, 2.2).
      if (isa<SaveOp, LoadOp, TopKOp, ApproxTopKOp, TrtllmTopKOp, UnionOp,
              GeMVOp, SumOp, TransposeOp, KronOp>(op))
        return op.emitOpError("is an indexer-side op and cannot appear in "
                              "the cache body");
      // A learned descriptor is the one standalone cache op: its own kernel
      // reads a pool and writes a field, so nothing else is split.
      if (auto ld = dyn_cast<LearnedDescriptorOp>(op)) {
        if (failed(verifyLearnedDescriptor(flow, body, ld)))
          return failure();
        continue;
      }
      auto sched = dyn_cast<ScheduledOpInterface>(op);
      if (sched && sched.getSchedule() == Schedule::S)
        return op.emitOpError("is standalone (schedule S); the cache side "
                              "fuses its ops into one per-block kernel (a "
                              "learned descriptor is the one exception)");
    } else if (isa<FillOp, WriteOp, LearnedDescriptorOp, MaxInterleaveOp,
                   MinInterleaveOp, MeanInterleaveOp, L2NormInterleaveOp>(
                   op)) {
      return op.emitOpError("is a cache-side op and cannot appear in the "
                            "indexer body");
    }
    // A mask keeps its input's type (MaskLanesOp::verify): masking q, k or
    // v keeps their dtype, which need not be the intermediate one.
    if (isa<MaskLanesOp>(op))
      continue;
    for (Type t : op.getResultTypes()) {
      auto v = cast<VTensorType>(t);
      if (isa<FloatType>(v.getElementType()) &&
          v.getElementType() != intermediate)
        return op.emitOpError("intermediate results use the flow's "
                              "intermediate dtype ")
               << intermediate << ", got " << v.getElementType() << " in the "
               << sideName << " body";
    }
  }
  return success();
}

/// Names the compiled flow's ABI gives its other step arguments
/// (FlowABI.h); a field or parameter may not take one.
static bool isReservedABIName(StringRef name) {
  return llvm::is_contained({"q", "dense_kv_indptr", "dense_kv_indices",
                             "sparse_kv_indptr", "sparse_kv_indices",
                             "block_ids", "kv_indptr", "kv_indices",
                             "kv_last_len", "o", "lse", "sm_scale",
                             "k_int4_scale", "v_int4_scale"},
                            name);
}

/// Field and parameter names: unique, k and v implicit, none an ABI name.
static LogicalResult verifyDeclarations(FlowOp flow,
                                        SmallVectorImpl<FieldAttr> &fields,
                                        SmallVectorImpl<FieldAttr> &params) {
  // Fields: unique names, k and v implicit.
  llvm::StringSet<> seen;
  for (Attribute a : flow.getFields()) {
    auto f = cast<FieldAttr>(a);
    StringRef name = f.getName().getValue();
    if (name == "k" || name == "v")
      return flow.emitOpError("cache field '")
             << name << "' is implicit and must not be declared";
    // vortex_torch's name of an MLA flow's pool, which is k here.
    if (name == "latent" && flow.getConfig().isMLA())
      return flow.emitOpError("cache field 'latent' is the MLA flow's "
                              "implicit pool 'k' and must not be declared");
    if (isReservedABIName(name))
      return flow.emitOpError("cache field '")
             << name << "' takes the name of a step argument of the "
                "compiled flow";
    if (!seen.insert(name).second)
      return flow.emitOpError("cache field '")
             << name << "' is declared twice";
    if (!fitsTile(f.getRows(), f.getCols()))
      return flow.emitOpError("cache field '")
             << name << "' [" << f.getRows() << ", " << f.getCols()
             << "] must have at most " << kMaxTileElements
             << " elements (padded to powers of two)";
    fields.push_back(f);
  }
  // Parameters: names unique across k, v, the fields and the parameters.
  SmallVector<FieldAttr> decls = flow.getParamDecls();
  params.assign(decls.begin(), decls.end());
  for (FieldAttr p : params) {
    StringRef name = p.getName().getValue();
    if (name == "k" || name == "v")
      return flow.emitOpError("parameter '")
             << name << "' takes the name of the cache tensor '" << name
             << "'";
    if (isReservedABIName(name))
      return flow.emitOpError("parameter '")
             << name << "' takes the name of a step argument of the "
                "compiled flow";
    if (llvm::any_of(fields,
                     [&](FieldAttr f) { return f.getName() == p.getName(); }))
      return flow.emitOpError("parameter '")
             << name << "' takes the name of a cache field";
    if (!seen.insert(name).second)
      return flow.emitOpError("parameter '") << name << "' is declared twice";
  }
  return success();
}

/// The bodies' arguments: k, v, the fields and parameters on both sides,
/// then q and o on the indexer's.
static LogicalResult verifySignatures(FlowOp flow, ArrayRef<FieldAttr> fields,
                                      ArrayRef<FieldAttr> params) {
  Block &cache = flow.getCacheBody(), &indexer = flow.getIndexerBody();
  size_t n = fields.size(), np = params.size();
  auto declared = [&](InFlightDiagnostic &diag) -> InFlightDiagnostic & {
    diag << n << " declared field(s)";
    if (np)
      diag << " and the " << np << " parameter(s)";
    return diag;
  };
  if (cache.getNumArguments() != 2 + n + np) {
    auto diag = flow.emitOpError("cache body must take k, v and the ");
    return declared(diag) << ", got " << cache.getNumArguments()
                          << " argument(s)";
  }
  if (indexer.getNumArguments() != 4 + n + np) {
    auto diag = flow.emitOpError("indexer body must take q, o, k, v and the ");
    return declared(diag) << ", got " << indexer.getNumArguments()
                          << " argument(s)";
  }
  VTensorType kv = flow.getKVType();
  for (auto [side, block, offset] :
       {std::tuple<Side, Block *, unsigned>{Side::Cache, &cache, 0},
        {Side::Indexer, &indexer, 2}}) {
    bool slotted = side == Side::Cache;
    if (failed(verifyArgType(flow, block->getArgument(offset), "k", kv,
                             slotted)) ||
        failed(verifyArgType(flow, block->getArgument(offset + 1), "v", kv,
                             slotted)))
      return failure();
    for (auto [i, f] : llvm::enumerate(fields))
      if (failed(verifyArgType(flow, block->getArgument(offset + 2 + i),
                               f.getName().getValue(), flow.getFieldType(f),
                               slotted)))
        return failure();
    for (auto [i, p] : llvm::enumerate(params))
      if (failed(verifyArgType(flow, block->getArgument(offset + 2 + n + i),
                               p.getName().getValue(), flow.getParamType(p),
                               /*allowSlotted=*/false)))
        return failure();
  }
  // q holds T >= 1 query tokens per row, token-major: [?, T x G, D]
  // (docs/contract.md, "Multi-token queries").
  auto q = dyn_cast<VTensorType>(indexer.getArgument(0).getType());
  int64_t g = flow.getConfig().getGroupSize();
  if (!q || !isa<FloatType>(q.getElementType()) || q.getD0() % g != 0 ||
      q.withExplicitPadding(false) !=
          flow.getQueryType(q.getElementType(), q.getD0() / g))
    return flow.emitOpError(
               "argument 'q' must be a batched float vtensor [?, T x ")
           << g << ", " << flow.getConfig().getHeadDim()
           << "] (T >= 1 query tokens), got "
           << indexer.getArgument(0).getType();
  if (failed(verifyArgType(flow, indexer.getArgument(1), "o",
                           flow.getOutputType(), false)))
    return failure();
  return success();
}

/// The indexer ends in exactly one selection, which writes o; a stage of a
/// split step that exports values (vortex.stage_out) has none: a later
/// stage selects.
static LogicalResult verifySelection(FlowOp flow) {
  Block &indexer = flow.getIndexerBody();
  Operation *selection = nullptr;
  auto exports = indexer.getOps<StageOutOp>();
  if (!exports.empty()) {
    if (Operation *sel = flow.getSelectionOp())
      return sel->emitOpError("is in a stage that exports values "
                              "(vortex.stage_out); the last stage selects");
    return success();
  }
  for (Operation &op : indexer) {
    if (!isa<TopKOp, ApproxTopKOp, UnionOp>(op))
      continue;
    if (selection)
      return op.emitOpError("is a second selection; the indexer must end in "
                            "exactly one topk, approx_topk or union");
    selection = &op;
  }
  if (!selection)
    return flow.emitOpError("indexer must end in exactly one vortex.topk, "
                            "vortex.approx_topk or vortex.union");
  if (selection != &indexer.back())
    return selection->emitOpError("must be the last op of the indexer body");
  if (selection->getOperands().back() != indexer.getArgument(1))
    return selection->emitOpError("must write the indexer's output 'o'");
  return success();
}

/// Whether `user` writes the field `f` (it may also read another operand:
/// a learned descriptor reads a pool).
static bool writesField(Operation *user, Value f) {
  return getWrittenField(user) == f;
}

/// k and v belong to the runtime; every declared field has a writer (cache
/// write/fill/learned descriptor or indexer save) and a reader on the
/// indexer side.
static LogicalResult verifyFieldUse(FlowOp flow, ArrayRef<FieldAttr> fields) {
  Block &cache = flow.getCacheBody(), &indexer = flow.getIndexerBody();
  for (unsigned i = 0; i < 2; ++i)
    for (Block *b : {&cache, &indexer})
      for (Value pool = b->getArgument(b == &cache ? i : i + 2);
           Operation *user : pool.getUsers())
        if (writesField(user, pool))
          return user->emitOpError("writes '")
                 << (i == 0 ? "k" : "v")
                 << "', which only the runtime writes";
  for (auto [i, f] : llvm::enumerate(fields)) {
    BlockArgument cacheArg = cache.getArgument(2 + i);
    BlockArgument indexerArg = indexer.getArgument(4 + i);
    // A slotted field is request-bound storage that the cache side writes
    // through slot_of_ptr; the indexer addresses fields by block id and
    // vortex_torch has no slotted indexer format (docs/contract.md).
    if (cast<VTensorType>(cacheArg.getType()).isSlotted()) {
      if (!indexerArg.use_empty())
        return (*indexerArg.getUsers().begin())->emitOpError("uses the "
                   "slotted field '")
               << f.getName().getValue()
               << "' on the indexer side; slotted fields are cache-side "
                  "storage addressed through slot_of_ptr";
      if (llvm::none_of(cacheArg.getUsers(), [](Operation *u) {
            return isa<WriteOp, FillOp>(u);
          }))
        return flow.emitOpError("slotted field '")
               << f.getName().getValue()
               << "' is never written (by vortex.write or vortex.fill on the "
                  "cache side)";
      continue;
    }
    bool written =
        llvm::any_of(cacheArg.getUsers(),
                     [&](Operation *u) { return writesField(u, cacheArg); }) ||
        llvm::any_of(indexerArg.getUsers(), [&](Operation *u) {
          return writesField(u, indexerArg);
        });
    // A field the indexer never reads is allowed, as in vortex_torch: a
    // flow may write a dummy field so its cache program has an output. It
    // is still allocated and written.
    if (!written)
      return flow.emitOpError("cache field '")
             << f.getName().getValue()
             << "' is never written (by vortex.write, vortex.fill or "
                "vortex.learned_descriptor on the cache side, or vortex.save "
                "on the indexer side)";
  }
  return success();
}

/// An MLA flow reads its one pool, the latent, as k; v is the same pool
/// seen as the values (its first kv_lora_rank channels), which only the
/// attention step reads.
static LogicalResult verifyMLAPool(FlowOp flow) {
  if (!flow.getConfig().isMLA())
    return success();
  for (auto [block, offset] : {std::pair<Block *, unsigned>{
                                   &flow.getCacheBody(), 1},
                               {&flow.getIndexerBody(), 3}}) {
    Value v = block->getArgument(offset);
    if (!v.use_empty())
      return (*v.getUsers().begin())->emitOpError("uses 'v' of an MLA flow; "
                                                  "its one pool is 'k' (the "
                                                  "latent [kv_c | k_pe])");
  }
  return success();
}

/// A parameter over the tile bound is streamed from memory by the ops that
/// can: GeMM's standalone parameter path, reading it as `y`, and a learned
/// descriptor's `proj`. Any other use would hold it in a tile
/// (docs/contract.md, "Bounds").
static LogicalResult verifyStreamedParams(FlowOp flow,
                                          ArrayRef<FieldAttr> params) {
  // The parameters are the last arguments of both bodies.
  for (Block *block : {&flow.getCacheBody(), &flow.getIndexerBody()}) {
    for (BlockArgument arg : block->getArguments().take_back(params.size())) {
      auto t = cast<VTensorType>(arg.getType());
      if (!t.isStreamedParameter())
        continue;
      for (OpOperand &use : arg.getUses()) {
        auto gemm = dyn_cast<GeMMOp>(use.getOwner());
        if (gemm && use.getOperandNumber() == 1)
          continue;
        if (isa<LearnedDescriptorOp>(use.getOwner()) &&
            use.getOperandNumber() == 2)
          continue;
        return use.getOwner()->emitOpError("reads the parameter [")
               << t.getD0() << ", " << t.getD1() << "] as operand "
               << use.getOperandNumber()
               << "; a parameter over the tile bound (" << kMaxTileElements
               << " elements, padded) is streamed and may only be GeMM's "
                  "weight y or a learned descriptor's proj";
      }
    }
  }
  return success();
}

LogicalResult FlowOp::verifyRegions() {
  SmallVector<FieldAttr> fields, params;
  if (failed(verifyDeclarations(*this, fields, params)) ||
      failed(verifySignatures(*this, fields, params)))
    return failure();
  if (failed(verifySideOps(*this, getCacheBody(), Side::Cache)) ||
      failed(verifySideOps(*this, getIndexerBody(), Side::Indexer)))
    return failure();
  return failure(failed(verifySelection(*this)) ||
                 failed(verifyFieldUse(*this, fields)) ||
                 failed(verifyStreamedParams(*this, params)) ||
                 failed(verifyMLAPool(*this)));
}
