//===- VortexBase.td - Vortex dialect, enums and attributes -*- tablegen -*-===//
//
// The vortex dialect models vortex_torch flows: decode-time sparse-attention
// algorithms written over rank-3 metadata tensors whose format says how the
// leading axis is addressed.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_VORTEXBASE_TD
#define VORTEX_DIALECT_VORTEXBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def Vortex_Dialect : Dialect {
  let name = "vortex";
  let cppNamespace = "::mlir::vortex";
  let summary = "Programmable decode-time sparse attention (vortex_torch flows)";
  let description = [{
    The `vortex` dialect is the IR of vortex_torch flows. A flow scores every
    KV block of every (request, KV head) row at each decode step and keeps the
    top-k blocks; its cache side summarizes each completed KV block (centroids,
    min/max envelopes, ...). Values are `!vortex.vtensor`s of shape
    `[L, D0, D1]` whose format (`batched`, `ragged`, `paged`, `parameter`,
    `slotted`) says how the leading axis `L` is addressed; the inner axes are
    static and are padded to powers of two only when a pass makes padding
    explicit.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = [];
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

//===----------------------------------------------------------------------===//
// Enums (numeric values are vortex_torch's, see vortex_torch/utils.py).
//===----------------------------------------------------------------------===//

def Vortex_Format : I32EnumAttr<"Format", "how the leading axis of a vtensor is addressed", [
    I32EnumAttrCase<"Batched", 0, "batched">,
    I32EnumAttrCase<"Ragged", 1, "ragged">,
    I32EnumAttrCase<"Paged", 2, "paged">,
    I32EnumAttrCase<"Parameter", 3, "parameter">,
    I32EnumAttrCase<"Slotted", 4, "slotted">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_ReduceKind : I32EnumAttr<"ReduceKind", "reduction kind (vortex_torch ReduceType)", [
    I32EnumAttrCase<"Mean", 0, "mean">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">,
    I32EnumAttrCase<"L2Norm", 3, "l2norm">,
    I32EnumAttrCase<"Sum", 4, "sum">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_BinaryKind : I32EnumAttr<"BinaryKind",
    "binary elementwise kind (vortex_torch ElementwiseBinaryOpType)", [
    I32EnumAttrCase<"Maximum", 0, "maximum">,
    I32EnumAttrCase<"Minimum", 1, "minimum">,
    I32EnumAttrCase<"Add", 2, "add">,
    I32EnumAttrCase<"Mul", 3, "mul">,
    I32EnumAttrCase<"WhereEqual", 4, "where_eq">,
    I32EnumAttrCase<"WhereNotEqual", 5, "where_ne">,
    I32EnumAttrCase<"WhereGreater", 6, "where_gt">,
    I32EnumAttrCase<"WhereGreaterEqual", 7, "where_ge">,
    I32EnumAttrCase<"WhereLess", 8, "where_lt">,
    I32EnumAttrCase<"WhereLessEqual", 9, "where_le">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_UnaryKind : I32EnumAttr<"UnaryKind",
    "unary elementwise kind (vortex_torch ElementwiseOpType)", [
    I32EnumAttrCase<"Relu", 0, "relu">,
    I32EnumAttrCase<"Sigmoid", 1, "sigmoid">,
    I32EnumAttrCase<"Silu", 2, "silu">,
    I32EnumAttrCase<"Abs", 3, "abs">,
    I32EnumAttrCase<"AddMul", 4, "add_mul">,
    I32EnumAttrCase<"Log", 5, "log">,
    I32EnumAttrCase<"Exp", 6, "exp">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_WherePredicate : I32EnumAttr<"WherePredicate",
    "predicate of the additive where-masks (BinaryKind = WhereEqual + value)", [
    I32EnumAttrCase<"Equal", 0, "eq">,
    I32EnumAttrCase<"NotEqual", 1, "ne">,
    I32EnumAttrCase<"Greater", 2, "gt">,
    I32EnumAttrCase<"GreaterEqual", 3, "ge">,
    I32EnumAttrCase<"Less", 4, "lt">,
    I32EnumAttrCase<"LessEqual", 5, "le">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_Schedule : I32EnumAttr<"Schedule",
    "W: fused into a per-workload kernel; S: standalone (a fusion barrier)", [
    I32EnumAttrCase<"W", 0, "w">,
    I32EnumAttrCase<"S", 1, "s">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Vortex_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Vortex_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Vortex_FormatAttr : EnumAttr<Vortex_Dialect, Vortex_Format, "format"> {
  let assemblyFormat = "`<` $value `>`";
}
def Vortex_ReduceKindAttr : EnumAttr<Vortex_Dialect, Vortex_ReduceKind, "reduce_kind"> {
  let assemblyFormat = "`<` $value `>`";
}
def Vortex_BinaryKindAttr : EnumAttr<Vortex_Dialect, Vortex_BinaryKind, "binary_kind"> {
  let assemblyFormat = "`<` $value `>`";
}
def Vortex_UnaryKindAttr : EnumAttr<Vortex_Dialect, Vortex_UnaryKind, "unary_kind"> {
  let assemblyFormat = "`<` $value `>`";
}
def Vortex_WherePredicateAttr
    : EnumAttr<Vortex_Dialect, Vortex_WherePredicate, "predicate"> {
  let assemblyFormat = "`<` $value `>`";
}
def Vortex_ScheduleAttr : EnumAttr<Vortex_Dialect, Vortex_Schedule, "schedule"> {
  let assemblyFormat = "`<` $value `>`";
}

/// A FloatAttr parameter that names what it expects when given another kind
/// of attribute (e.g. the integer literal `0`).
def Vortex_RatioParameter : AttrParameter<"::mlir::FloatAttr", "a ratio"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::mlir::FloatAttr> {
      ::llvm::SMLoc loc = $_parser.getCurrentLocation();
      ::mlir::Attribute attr;
      if ($_parser.parseAttribute(attr))
        return ::mlir::failure();
      if (auto ratio = ::llvm::dyn_cast<::mlir::FloatAttr>(attr))
        return ratio;
      return $_parser.emitError(loc, "topk_ratio must be a float literal "
                                     "(e.g. 0.0 or 6.25e-02), got ")
             << attr;
    }() }];
}

def Vortex_FlowConfigAttr : Vortex_Attr<"FlowConfig", "config"> {
  let summary = "parameters of a flow (VortexConfig and the model's GQA shape)";
  let description = [{
    The knobs a flow is compiled for. `head_dim` and `group_size` (query
    heads per KV head, G) fix the inner shapes; `block_size` and `page_size`
    are powers of two with `block_size <= page_size`; the per-row top-k budget
    is `max(topk_val + reserved_bos + reserved_eos, int(n * topk_ratio))`.
    `intermediate_dtype` is the element type of every intermediate and of the
    declared cache fields, `kv_dtype` that of `k` and `v`.

    `kv_dtype = i4` is vortex_torch's packed INT4 pool (Gen-3): `k` and `v`
    are stored as bytes `[blocks, block_size, head_dim / 2]`, channel `d` in
    byte `d / 2` (low nibble for even `d`), biased by 7; they read as the
    f32 values `(nibble - 7) * scale` with the per-channel K scale
    `k_int4_scale [blocks, 1, head_dim]` and the per-token V scale
    `v_int4_scale [blocks, block_size, 1]` (docs/contract.md, "INT4 KV").
    In the IR, `k` and `v` are f32 vtensors (their dequantized values);
    `head_dim` must be even, and MLA flows are refused.

    An MLA flow (vortex_torch `vFlowMLA`) sets `kv_lora_rank` and `rope_dim`,
    both positive with `kv_lora_rank + rope_dim = head_dim`: its one pool
    `k` is the latent `[kv_c | k_pe]` (vortex_torch's `cache["latent"]`),
    `q` the absorbed query `[q_nope_out | q_pe]` of all the query heads
    (`group_size` of them, one KV head), and `v` is the same pool, whose
    first `kv_lora_rank` channels are the values (docs/design.md, "MLA
    flows"). Both are 0, and not printed, for any other flow.

    ```mlir
    #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
                   group_size = 16, topk_val = 29, topk_ratio = 0.0 : f64,
                   reserved_bos = 1, reserved_eos = 2,
                   intermediate_dtype = bf16, kv_dtype = bf16,
                   kv_lora_rank = 512, rope_dim = 64>
    ```

    ```mlir
    #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
                   group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
                   reserved_bos = 1, reserved_eos = 2,
                   intermediate_dtype = bf16, kv_dtype = bf16>
    ```
  }];
  let parameters = (ins
    "int64_t":$block_size,
    "int64_t":$page_size,
    "int64_t":$head_dim,
    "int64_t":$group_size,
    "int64_t":$topk_val,
    Vortex_RatioParameter:$topk_ratio,
    "int64_t":$reserved_bos,
    "int64_t":$reserved_eos,
    "::mlir::Type":$intermediate_dtype,
    "::mlir::Type":$kv_dtype,
    DefaultValuedParameter<"int64_t", "0", "MLA latent rank">:$kv_lora_rank,
    DefaultValuedParameter<"int64_t", "0", "MLA RoPE width">:$rope_dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The budget's fixed part, `topk_val + reserved_bos + reserved_eos`: a
    /// row of at most this many blocks needs no selection.
    int64_t getMinBudget() const {
      return getTopkVal() + getReservedBos() + getReservedEos();
    }
    /// An MLA flow: one latent pool, values in its first kv_lora_rank
    /// channels.
    bool isMLA() const { return getKvLoraRank() != 0; }
    /// Packed int4 k/v (kv_dtype = i4), dequantized where they are read.
    bool isInt4KV() const { return getKvDtype().isSignlessInteger(4); }
  }];
}

def Vortex_FieldAttr : Vortex_Attr<"Field", "field"> {
  let summary = "a cache field declared by a flow: name and [r, c] shape";
  let description = [{
    One entry of a flow's `create_cache`: a field of `r x c` elements per KV
    block, stored as a paged tensor `[num_blocks, r, c]` of the flow's
    intermediate dtype. `k` and `v` are implicit and may not be declared.

    ```mlir
    #vortex.field<"centroids", 1, 128>
    ```
  }];
  let parameters = (ins
    "::mlir::StringAttr":$name,
    "int64_t":$rows,
    "int64_t":$cols);
  let assemblyFormat = "`<` $name `,` $rows `,` $cols `>`";
  let genVerifyDecl = 1;
}

include "Vortex/Dialect/VortexManifest.td"
include "Vortex/Dialect/VortexPlans.td"

#endif // VORTEX_DIALECT_VORTEXBASE_TD
