//===- FlowABI.h - The one description of a compiled flow -------*- C++ -*-===//
//
// What a compiled `vortex.flow` exchanges with its caller: the tensors (name,
// role, dtype, symbolic shape), the symbols that size them, the steps
// (indexer, cache and the optional attend) with their argument order and the
// tensors each writes, and the kernels each step launches with their reads
// and writes. Both back ends
// (convert-vortex-to-linalg for the CPU, convert-vortex-to-gpu) build it
// here and serialize it into the same versioned manifest (docs/manifest.md);
// the Python runtime reads nothing else. The names below are the only
// spelling of the ABI in C++.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_FLOWABI_H
#define VORTEX_DIALECT_FLOWABI_H

#include "Vortex/Dialect/VortexOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::vortex::abi {

/// Manifest format version; bump on any incompatible change.
inline constexpr int64_t kManifestVersion = 2;
/// The module attribute that carries a lowered flow's manifest.
inline constexpr llvm::StringLiteral kManifestAttrName = "vortex.manifest";
/// Manifest keys that passes and tools after the back end read or set: the
/// steps, a step's arguments, writes and launches, a launch's kernel,
/// params (each a name and a kind, "buffer" or "scalar"), reads and
/// writes, `pdl` (the launch may overlap the one before it;
/// vortex-gpu-chain-launches) and `choice` (launches sharing one are
/// alternatives: the runtime launches exactly one of them).
inline constexpr llvm::StringLiteral kManifestSteps = "steps";
inline constexpr llvm::StringLiteral kManifestArgs = "args";
inline constexpr llvm::StringLiteral kManifestReads = "reads";
inline constexpr llvm::StringLiteral kManifestWrites = "writes";
inline constexpr llvm::StringLiteral kManifestKernels = "kernels";
inline constexpr llvm::StringLiteral kManifestKernel = "kernel";
inline constexpr llvm::StringLiteral kManifestParams = "params";
inline constexpr llvm::StringLiteral kManifestParamName = "name";
inline constexpr llvm::StringLiteral kManifestParamKind = "kind";
inline constexpr llvm::StringLiteral kManifestBufferParam = "buffer";
inline constexpr llvm::StringLiteral kManifestScalarParam = "scalar";
/// A scalar's type ("i32" when absent, or "i64") and its fixed value.
inline constexpr llvm::StringLiteral kManifestParamDtype = "dtype";
inline constexpr llvm::StringLiteral kManifestParamValue = "value";
inline constexpr llvm::StringLiteral kManifestPdl = "pdl";
/// The attend step's reason why `decode` (the indexer, then attend over its
/// selection) would not be exact for the flow; absent when it is.
inline constexpr llvm::StringLiteral kManifestDecodeRefusal = "decode_refusal";
inline constexpr llvm::StringLiteral kManifestChoice = "choice";

// Tensor names. The cache tensors are `k`, `v` and the declared fields; the
// parameters are named as declared.
inline constexpr llvm::StringLiteral kQuery = "q";
inline constexpr llvm::StringLiteral kDenseIndptr = "dense_kv_indptr";
inline constexpr llvm::StringLiteral kDenseIndices = "dense_kv_indices";
inline constexpr llvm::StringLiteral kSparseIndptr = "sparse_kv_indptr";
inline constexpr llvm::StringLiteral kSparseIndices = "sparse_kv_indices";
inline constexpr llvm::StringLiteral kBlockIds = "block_ids";
/// The cache step's slot map, for flows with slotted fields: the slot of
/// each pool block (< 0: none; docs/contract.md "Slotted fields").
inline constexpr llvm::StringLiteral kSlotOfPtr = "slot_of_ptr";
/// The scales of a packed int4 pool (kv_dtype = i4; docs/contract.md "INT4
/// KV"): f32 paged cache tensors, per channel for K `[blocks, 1, head_dim]`
/// and per token for V `[blocks, block_size, 1]`. Both steps take them
/// last; k and v are then bytes `[blocks, block_size, head_dim / 2]`.
inline constexpr llvm::StringLiteral kKInt4Scale = "k_int4_scale";
inline constexpr llvm::StringLiteral kVInt4Scale = "v_int4_scale";
/// The nibble bias of a packed int4 value: x = (nibble - 7) * scale.
inline constexpr int64_t kInt4Bias = 7;
/// The attend step (docs/contract.md "Attention"): a CSR over the pools (the
/// dense one or the indexer's selection), the tokens valid in each row's
/// last entry (FlashInfer's last_page_len, 1..block_size), the output
/// [rows, T x G, D] in q's dtype, the natural-log log-sum-exp [rows, T x G]
/// (f32) and the softmax scale (f32 [1]).
inline constexpr llvm::StringLiteral kKvIndptr = "kv_indptr";
inline constexpr llvm::StringLiteral kKvIndices = "kv_indices";
inline constexpr llvm::StringLiteral kKvLastLen = "kv_last_len";
inline constexpr llvm::StringLiteral kAttnOut = "o";
inline constexpr llvm::StringLiteral kAttnLse = "lse";
inline constexpr llvm::StringLiteral kSmScale = "sm_scale";

// Symbols: the runtime binds them from the shapes of their defining tensors.
inline constexpr llvm::StringLiteral kRows = "rows";
inline constexpr llvm::StringLiteral kTotal = "total";
inline constexpr llvm::StringLiteral kNumBlocks = "num_blocks";
inline constexpr llvm::StringLiteral kNumNew = "num_new";
/// The leading extent of slotted fields (bound from the first of them).
inline constexpr llvm::StringLiteral kNumSlots = "num_slots";

// Constants: scalar parameters whose values the manifest holds, so that a
// kernel's text does not depend on them. The top-k's knobs (flow config):
// a row keeps max(topk_min_budget, (int)(n * topk_ratio)) blocks, where
// topk_min_budget = topk_val + reserved_bos + reserved_eos and the ratio is
// passed as the bits of its f64 (i64), so that it reaches the kernel exact.
inline constexpr llvm::StringLiteral kTopkMinBudget = "topk_min_budget";
inline constexpr llvm::StringLiteral kTopkRatioBits = "topk_ratio_bits";
inline constexpr llvm::StringLiteral kReservedBos = "reserved_bos";
inline constexpr llvm::StringLiteral kReservedEos = "reserved_eos";
/// A saved score the top-k can store (docs/gpu.md, "Saves in the top-k") is
/// stored by the top-k in a step of more rows than this, else by the score
/// kernel; both kernels take it.
inline constexpr llvm::StringLiteral kSavesMinRows = "saves_min_rows";
/// The attend step's split count: a launch value the runtime chooses from
/// rows and row length (docs/gpu.md, "Attention"), so that the kernels'
/// text does not depend on it.
inline constexpr llvm::StringLiteral kKvSplits = "kv_splits";

/// Input: q, the dense CSR, block_ids; Cache: k, v and the fields; Output:
/// the sparse CSR; Scratch: back-end buffers; Parameter: the flow's learned
/// parameters `[1, r, c]`, arguments of both steps, read-only; Status: the
/// GPU kernels' error word (`kStatusWords` i32, owned by the runtime per
/// device, never an argument; docs/gpu.md "Guards").
using Role = ::mlir::vortex::TensorRole;

/// The status buffer: word 0 is an OR of the `StatusFlag`s seen, word 1 an
/// offending value, word 2 its position, word 3 how many entries were bad.
inline constexpr int64_t kStatusWords = 4;
enum StatusFlag : int32_t {
  kBadDenseIndex = 1, ///< a dense_kv_indices entry outside [0, num_blocks)
  kBadBlockId = 2,    ///< a block_ids entry >= num_blocks
  kBadIndptr = 4,     ///< dense_kv_indptr not a CSR over dense_kv_indices
  kBadSlot = 8,       ///< a slot_of_ptr entry >= num_slots
};
/// Each flag and the tensor whose entries it reports; the manifest's status
/// tensor carries this table (`"flags"`), so readers take the bits from it.
struct StatusFlagDef {
  StatusFlag flag;
  llvm::StringLiteral tensor;
};
llvm::ArrayRef<StatusFlagDef> getStatusFlags();
/// The steps of a compiled flow. Attend is optional in a manifest: a back
/// end that records no kernel for it emits neither the step nor its
/// tensors (docs/manifest.md).
using Step = ::mlir::vortex::Step;

/// A symbol and the tensor whose leading extent defines it.
struct SymbolDef {
  llvm::StringLiteral name;
  llvm::StringLiteral tensor;
};
/// In binding order.
llvm::ArrayRef<SymbolDef> getSymbols();

/// A kernel parameter: a buffer (a manifest tensor), or a scalar: a symbol
/// the runtime binds at launch, or a constant whose value the manifest
/// holds.
struct Param {
  std::string name;
  bool isBuffer;
  /// Buffers: the element type. Scalars: i32 (also when null) or i64.
  Type elementType;
  /// Scalars only: the constant value.
  std::optional<int64_t> value = std::nullopt;
};

/// A tensor known to the runtime; `shape` holds symbols ("rows", "rows+1")
/// or integers, as strings.
struct TensorRecord {
  Role role;
  Type elementType;
  SmallVector<std::string> shape;
};

/// One launch of a step: a GPU kernel or the CPU step function (grid
/// `host`); serialized as a LaunchAttr.
struct KernelRecord {
  std::string name;
  Step step;
  GridKind grid = GridKind::Rows;
  int64_t ctasPerSM = 0; // persistent
  std::string itemsOf;   // items
  int64_t perCTA = 0;    // items
  int64_t threads = 1;
  int64_t sharedBytes = 0;
  SmallVector<Param> params;
  SmallVector<std::string> reads, writes;
  /// Non-empty: this launch and the adjacent ones of the same choice are
  /// alternatives that compute the same thing; the runtime launches the
  /// first whose grid fits on the device in one wave, else the last.
  std::string choice;
  /// The grid's fixed z extent (1: none).
  int64_t gridZ = 1;
};

/// How float tensors are stored: in the flow's dtypes (GPU) or as f32 (the
/// CPU lowering computes and stores everything in f32).
enum class Storage { FlowDtypes, F32 };

/// The ABI of one flow. The flow tensors and the step signatures come from
/// `get`; a back end appends its scratch tensors and its kernels.
struct FlowABI {
  std::string flow;
  FlowConfigAttr config;
  /// Hash of the flow as it reaches the back end: equal for the CPU and the
  /// GPU build of one flow, so both serve one torch op.
  std::string sourceHash;
  std::map<std::string, TensorRecord> tensors;
  /// Step arguments in call order, and the ones each step writes.
  SmallVector<std::string> indexerArgs, cacheArgs, attendArgs;
  SmallVector<std::string> indexerWrites, cacheWrites, attendWrites;
  std::vector<KernelRecord> kernels;
  /// The slotted field that binds `num_slots` (empty: the flow has none).
  std::string slotsDefinedBy;
  /// Why attention over the flow's own selection would miss tokens the
  /// causal mask relies on, starting with the name to blame (reserved_eos,
  /// or q for T); empty when decode is exact (docs/contract.md "Attention").
  std::string decodeRefusal;

  static FlowABI get(FlowOp flow, Storage storage);

  ArrayRef<std::string> args(Step step) const;
  ArrayRef<std::string> writes(Step step) const;
  /// Whether a kernel of `step` was recorded (the manifest holds only such
  /// optional steps).
  bool hasKernels(Step step) const;
  /// The element type of tensor `name` (which must exist).
  Type elementType(llvm::StringRef name) const;
  /// Records the step function of a host (CPU) back end as the step's one
  /// kernel: every argument a buffer, in call order.
  void addHostStep(Step step, llvm::StringRef symbol);

  /// The manifest as a typed attribute (docs/manifest.md); `backend` is
  /// "cpu" or "cuda". The driver adds the target and the artifact names
  /// when it writes it as JSON.
  ManifestAttr toManifest(Builder &b, llvm::StringRef backend) const;
};

/// The manifest dtype name of a type: "bf16", "f16", "f32", "f8E4M3FN",
/// "f8E5M2", "u8" (8-bit integers: packed int4 k/v), "i32".
std::string dtypeName(Type t);

} // namespace mlir::vortex::abi

#endif // VORTEX_DIALECT_FLOWABI_H
