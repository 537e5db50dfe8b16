//===- FlowABI.cpp - The one description of a compiled flow ---------------===//

#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Dialect/VortexStageOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::abi;

ArrayRef<StatusFlagDef> abi::getStatusFlags() {
  static const StatusFlagDef flags[] = {{kBadDenseIndex, kDenseIndices},
                                        {kBadBlockId, kBlockIds},
                                        {kBadIndptr, kDenseIndptr},
                                        {kBadSlot, kSlotOfPtr}};
  return flags;
}

ArrayRef<SymbolDef> abi::getSymbols() {
  static const SymbolDef symbols[] = {{kRows, kDenseIndptr},
                                      {kTotal, kDenseIndices},
                                      {kNumBlocks, "k"},
                                      {kNumNew, kBlockIds}};
  return symbols;
}

std::string abi::dtypeName(Type t) {
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
  if (t.isInteger(8))
    return "u8";
  if (t.isInteger(4))
    return "i4";
  return "i32";
}

static std::string hashFlow(FlowOp flow) {
  std::string text;
  llvm::raw_string_ostream os(text);
  flow->print(os, OpPrintingFlags().useLocalScope());
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
                     /*LowerCase=*/true);
}

/// Fields a step body writes, in declaration order.
static SmallVector<std::string> writtenFields(Block &body,
                                              ArrayRef<StringRef> names,
                                              unsigned firstCacheArg) {
  llvm::SmallDenseSet<Value> written;
  body.walk([&](Operation *op) {
    if (Value field = getWrittenField(op))
      written.insert(field);
  });
  SmallVector<std::string> out;
  for (auto [i, name] : llvm::enumerate(names))
    if (written.contains(body.getArgument(firstCacheArg + i)))
      out.push_back(name.str());
  return out;
}

/// The attend step: `(q, k, v, kv_indptr, kv_indices, kv_last_len, o, lse,
/// sm_scale)`. `rows` binds from q (dense_kv_indptr is not an argument) and
/// `total` from kv_indices, by the manifest's binding rule.
template <typename AddFn>
static void addAttendStep(FlowABI &abi, VTensorType q, AddFn add) {
  MLIRContext *ctx = q.getContext();
  auto i32 = IntegerType::get(ctx, 32);
  std::string rows = kRows.str();
  std::string heads = std::to_string(q.getD0());
  add(kKvIndptr, Role::Input, i32, {(kRows + "+1").str()});
  add(kKvIndices, Role::Input, i32, {kTotal.str()});
  add(kKvLastLen, Role::Input, i32, {rows});
  add(kAttnOut, Role::Output, q.getElementType(),
      {rows, heads, std::to_string(q.getD1())});
  add(kAttnLse, Role::Output, Float32Type::get(ctx), {rows, heads});
  add(kSmScale, Role::Input, Float32Type::get(ctx), {"1"});
  for (StringRef name :
       {StringRef(kQuery), StringRef("k"), StringRef("v"), StringRef(kKvIndptr),
        StringRef(kKvIndices), StringRef(kKvLastLen), StringRef(kAttnOut),
        StringRef(kAttnLse), StringRef(kSmScale)})
    abi.attendArgs.push_back(name.str());
  abi.attendWrites = {kAttnOut.str(), kAttnLse.str()};
}

/// Decode attends over the selection with the rows' kv_last_len, so the
/// selection must end with the row's last blocks, in order, covering the
/// last T - 1 tokens (query token 0 does not see them) and the partial block
/// kv_last_len describes (which may hold a single token). top-k selections
/// end with the last reserved_eos blocks; a union pins only the last block.
static std::string decodeRefusalOf(FlowOp flow) {
  FlowConfigAttr c = flow.getConfig();
  int64_t tokens = flow.getQueryTokens(), eos = c.getReservedEos();
  std::string out;
  llvm::raw_string_ostream os(out);
  if (isa_and_nonnull<UnionOp>(flow.getSelectionOp())) {
    if (tokens > 2)
      os << "q: decode over a union selection is exact for at most 2 query "
            "tokens (the union pins only the row's last block at its tail); "
            "the flow has "
         << tokens;
    return out;
  }
  if (eos < 1)
    os << "reserved_eos: decode needs reserved_eos >= 1 (the flow has 0): a "
          "selection could drop the row's partial last block, which "
          "kv_last_len describes as the CSR's last entry";
  else if ((eos - 1) * c.getBlockSize() + 1 < tokens - 1)
    os << "reserved_eos: decode with " << tokens
       << " query tokens needs (reserved_eos - 1) * block_size + 1 >= "
       << tokens - 1 << " (the last T - 1 tokens in the kept EOS blocks); "
       << "the flow has reserved_eos = " << eos
       << ", block_size = " << c.getBlockSize();
  return out;
}

FlowABI FlowABI::get(FlowOp flow, Storage storage) {
  FlowABI abi;
  abi.flow = flow.getSymName().str();
  abi.config = flow.getConfig();
  abi.sourceHash = hashFlow(flow);
  MLIRContext *ctx = flow.getContext();
  auto stored = [&](Type t) -> Type {
    return storage == Storage::F32 && isa<FloatType>(t) ? Float32Type::get(ctx)
                                                        : t;
  };
  auto add = [&](StringRef name, Role role, Type type,
                 SmallVector<std::string> shape) {
    abi.tensors[name.str()] = TensorRecord{role, stored(type), std::move(shape)};
  };
  Block &indexer = flow.getIndexerBody(), &cache = flow.getCacheBody();
  SmallVector<StringRef> names = flow.getCacheTensorNames();
  auto q = cast<VTensorType>(indexer.getArgument(0).getType());
  add(kQuery, Role::Input, q.getElementType(),
      {kRows.str(), std::to_string(q.getD0()), std::to_string(q.getD1())});
  // A slotted field (typed so on the cache side) has one row per slot.
  std::string firstSlotted;
  for (auto [i, name] : llvm::enumerate(names)) {
    auto t = cast<VTensorType>(indexer.getArgument(2 + i).getType());
    bool slotted = cast<VTensorType>(cache.getArgument(i).getType()).isSlotted();
    if (slotted && firstSlotted.empty())
      firstSlotted = name.str();
    add(name, Role::Cache, t.getElementType(),
        {(slotted ? kNumSlots : kNumBlocks).str(), std::to_string(t.getD0()),
         std::to_string(t.getD1())});
  }
  // Parameters: one value [1, r, c] shared by every row (the constant 1, not
  // a symbol), after the fields in both bodies.
  SmallVector<StringRef> params = flow.getParamNames();
  for (auto [i, name] : llvm::enumerate(params)) {
    auto t = cast<VTensorType>(
        indexer.getArgument(2 + names.size() + i).getType());
    add(name, Role::Parameter, t.getElementType(),
        {"1", std::to_string(t.getD0()), std::to_string(t.getD1())});
  }
  auto i32 = IntegerType::get(ctx, 32);
  std::string rowsPlusOne = (kRows + "+1").str();
  add(kDenseIndptr, Role::Input, i32, {rowsPlusOne});
  add(kDenseIndices, Role::Input, i32, {kTotal.str()});
  add(kSparseIndptr, Role::Output, i32, {rowsPlusOne});
  add(kSparseIndices, Role::Output, i32, {kTotal.str()});
  add(kBlockIds, Role::Input, i32, {kNumNew.str()});
  if (!firstSlotted.empty()) {
    add(kSlotOfPtr, Role::Input, i32, {kNumBlocks.str()});
    abi.slotsDefinedBy = firstSlotted;
  }

  // o (the indexer's second argument) becomes the sparse CSR. Both steps
  // take the parameters after the fields; no step writes them.
  abi.indexerArgs.push_back(kQuery.str());
  for (StringRef name : llvm::concat<StringRef>(names, params))
    abi.indexerArgs.push_back(name.str());
  for (StringRef name :
       {kDenseIndptr, kDenseIndices, kSparseIndptr, kSparseIndices})
    abi.indexerArgs.push_back(name.str());
  // A stage of a split step (vortex-split-custom-calls): its imports and
  // exports are indexer arguments after the sparse CSR, in body order,
  // per position (`total`) or per row (`rows`).
  SmallVector<std::string> exports;
  indexer.walk([&](Operation *op) {
    auto in = dyn_cast<StageInOp>(op);
    auto out = dyn_cast<StageOutOp>(op);
    if (!in && !out)
      return;
    auto t = cast<VTensorType>(in ? in.getResult().getType()
                                  : out.getValue().getType());
    std::string name = (in ? in.getName() : out.getName()).str();
    add(name, in ? Role::Input : Role::Output, t.getElementType(),
        {(t.isRagged() ? kTotal : kRows).str(), std::to_string(t.getD0()),
         std::to_string(t.getD1())});
    abi.indexerArgs.push_back(name);
    if (out)
      exports.push_back(name);
  });
  for (StringRef name : llvm::concat<StringRef>(names, params))
    abi.cacheArgs.push_back(name.str());
  abi.cacheArgs.push_back(kBlockIds.str());
  if (!firstSlotted.empty())
    abi.cacheArgs.push_back(kSlotOfPtr.str());

  addAttendStep(abi, q, add);
  // Packed int4 k/v: bytes, two channels each, and their scales, last in
  // every step.
  FlowConfigAttr c = flow.getConfig();
  if (c.isInt4KV()) {
    // Signless bytes (arith needs them); the manifest names them u8.
    auto u8 = IntegerType::get(ctx, 8);
    auto f32 = Float32Type::get(ctx);
    std::string blocks = kNumBlocks.str(), bs = std::to_string(c.getBlockSize());
    std::string dim = std::to_string(c.getHeadDim());
    for (StringRef name : {"k", "v"})
      add(name, Role::Cache, u8,
          {blocks, bs, std::to_string(c.getHeadDim() / 2)});
    add(kKInt4Scale, Role::Cache, f32, {blocks, "1", dim});
    add(kVInt4Scale, Role::Cache, f32, {blocks, bs, "1"});
    for (StringRef name : {kKInt4Scale, kVInt4Scale}) {
      abi.indexerArgs.push_back(name.str());
      abi.cacheArgs.push_back(name.str());
      abi.attendArgs.push_back(name.str());
    }
  }
  abi.decodeRefusal = decodeRefusalOf(flow);

  abi.indexerWrites = writtenFields(indexer, names, /*firstCacheArg=*/2);
  abi.indexerWrites.push_back(kSparseIndptr.str());
  abi.indexerWrites.push_back(kSparseIndices.str());
  abi.indexerWrites.append(exports.begin(), exports.end());
  abi.cacheWrites = writtenFields(cache, names, /*firstCacheArg=*/0);
  return abi;
}

ArrayRef<std::string> FlowABI::args(Step step) const {
  switch (step) {
  case Step::Indexer:
    return indexerArgs;
  case Step::Cache:
    return cacheArgs;
  case Step::Attend:
    return attendArgs;
  }
  llvm_unreachable("unknown step");
}

ArrayRef<std::string> FlowABI::writes(Step step) const {
  switch (step) {
  case Step::Indexer:
    return indexerWrites;
  case Step::Cache:
    return cacheWrites;
  case Step::Attend:
    return attendWrites;
  }
  llvm_unreachable("unknown step");
}

bool FlowABI::hasKernels(Step step) const {
  return llvm::any_of(kernels,
                      [&](const KernelRecord &k) { return k.step == step; });
}

Type FlowABI::elementType(StringRef name) const {
  auto it = tensors.find(name.str());
  assert(it != tensors.end() && "not a tensor of the flow");
  return it->second.elementType;
}

void FlowABI::addHostStep(Step step, StringRef symbol) {
  KernelRecord rec;
  rec.name = symbol.str();
  rec.step = step;
  rec.grid = GridKind::Host;
  for (const std::string &arg : args(step)) {
    rec.params.push_back({arg, true, elementType(arg)});
    if (!llvm::is_contained(writes(step), arg) ||
        tensors.at(arg).role == Role::Cache)
      rec.reads.push_back(arg);
  }
  llvm::append_range(rec.writes, writes(step));
  kernels.push_back(std::move(rec));
}

static ArrayAttr strArray(Builder &b, ArrayRef<std::string> items) {
  SmallVector<Attribute> attrs;
  for (const std::string &s : items)
    attrs.push_back(b.getStringAttr(s));
  return b.getArrayAttr(attrs);
}

static DictionaryAttr configAttr(Builder &b, FlowConfigAttr c) {
  SmallVector<NamedAttribute> attrs(
      {b.getNamedAttr("block_size", b.getI64IntegerAttr(c.getBlockSize())),
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
       b.getNamedAttr("kv_dtype", b.getStringAttr(dtypeName(c.getKvDtype())))});
  // Only an MLA flow's manifest names the latent's widths.
  if (c.isMLA()) {
    attrs.push_back(
        b.getNamedAttr("kv_lora_rank", b.getI64IntegerAttr(c.getKvLoraRank())));
    attrs.push_back(
        b.getNamedAttr("rope_dim", b.getI64IntegerAttr(c.getRopeDim())));
  }
  return b.getDictionaryAttr(attrs);
}

static LaunchAttr launchAttr(Builder &b, const KernelRecord &k) {
  MLIRContext *ctx = b.getContext();
  GridKind grid = k.grid;
  SmallVector<Attribute> params;
  for (const Param &p : k.params) {
    bool i64 = !p.isBuffer && p.elementType && p.elementType.isInteger(64);
    params.push_back(LaunchParamAttr::get(
        ctx, b.getStringAttr(p.name),
        p.isBuffer ? ParamKind::Buffer : ParamKind::Scalar,
        i64 ? p.elementType : Type(),
        p.isBuffer ? std::nullopt : p.value));
  }
  return LaunchAttr::get(
      ctx, b.getStringAttr(k.name), grid,
      grid == GridKind::Persistent ? k.ctasPerSM : 0,
      grid == GridKind::Items ? b.getStringAttr(k.itemsOf) : StringAttr(),
      grid == GridKind::Items ? k.perCTA : 0, k.threads, k.sharedBytes,
      b.getArrayAttr(params), strArray(b, k.reads), strArray(b, k.writes),
      /*pdl=*/BoolAttr(),
      k.choice.empty() ? StringAttr() : b.getStringAttr(k.choice), k.gridZ);
}

ManifestAttr FlowABI::toManifest(Builder &b, StringRef backend) const {
  // The attend step is optional (a back end without its kernel, e.g. the
  // GPU one today): without it, neither the step nor its own tensors.
  bool attend = hasKernels(Step::Attend);
  auto onlyAttend = [&](const std::string &name) {
    return llvm::is_contained(attendArgs, name) &&
           !llvm::is_contained(indexerArgs, name) &&
           !llvm::is_contained(cacheArgs, name);
  };
  SmallVector<NamedAttribute> tensorAttrs;
  for (const auto &[name, rec] : tensors) {
    if (!attend && onlyAttend(name))
      continue;
    SmallVector<Attribute> shape;
    for (const std::string &d : rec.shape) {
      int64_t v;
      if (!StringRef(d).getAsInteger(10, v))
        shape.push_back(b.getI64IntegerAttr(v));
      else
        shape.push_back(b.getStringAttr(d));
    }
    DictionaryAttr flags;
    if (rec.role == Role::Status) {
      SmallVector<NamedAttribute> entries;
      for (const StatusFlagDef &f : getStatusFlags())
        entries.push_back(
            b.getNamedAttr(f.tensor, b.getI64IntegerAttr(f.flag)));
      flags = b.getDictionaryAttr(entries);
    }
    tensorAttrs.push_back(b.getNamedAttr(
        name, TensorAttr::get(b.getContext(), rec.role, rec.elementType,
                              b.getArrayAttr(shape), flags)));
  }
  SmallVector<NamedAttribute> symbols;
  for (const SymbolDef &s : getSymbols())
    symbols.push_back(b.getNamedAttr(s.name, b.getStringAttr(s.tensor)));
  if (!slotsDefinedBy.empty())
    symbols.push_back(
        b.getNamedAttr(kNumSlots, b.getStringAttr(slotsDefinedBy)));
  auto stepAttr = [&](Step step) {
    SmallVector<Attribute> launches;
    for (const KernelRecord &k : kernels)
      if (k.step == step)
        launches.push_back(launchAttr(b, k));
    return StepAttr::get(b.getContext(), strArray(b, args(step)),
                         strArray(b, writes(step)), b.getArrayAttr(launches),
                         step == Step::Attend && !decodeRefusal.empty()
                             ? b.getStringAttr(decodeRefusal)
                             : StringAttr());
  };
  SmallVector<NamedAttribute> steps = {
      b.getNamedAttr(stringifyStep(Step::Indexer), stepAttr(Step::Indexer)),
      b.getNamedAttr(stringifyStep(Step::Cache), stepAttr(Step::Cache))};
  if (attend)
    steps.push_back(b.getNamedAttr(stringifyStep(Step::Attend),
                                   stepAttr(Step::Attend)));
  return ManifestAttr::get(
      b.getContext(), kManifestVersion, b.getStringAttr(flow),
      b.getStringAttr(backend), b.getStringAttr(sourceHash),
      configAttr(b, config), b.getDictionaryAttr(symbols),
      b.getDictionaryAttr(tensorAttrs), b.getDictionaryAttr(steps));
}
