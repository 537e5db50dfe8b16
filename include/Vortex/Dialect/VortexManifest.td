//===- VortexManifest.td - The typed manifest of a lowered flow -*- tablegen -*-===//
//
// What a back end leaves on the module for the compile driver and the
// runtime (abi::FlowABI serialized, docs/manifest.md). It stays typed until
// the driver writes it as JSON (lib/Target/Manifest.cpp), the way IREE's
// `translation_info` carries a typed plan: passes after the lowering
// (vortex-gpu-chain-launches) read and update it through accessors, and a
// hand-written manifest is checked when it is parsed.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_VORTEXMANIFEST_TD
#define VORTEX_DIALECT_VORTEXMANIFEST_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Vortex_TensorRole : I32EnumAttr<"TensorRole",
    "what a tensor of the flow ABI is to its caller", [
    I32EnumAttrCase<"Input", 0, "input">,
    I32EnumAttrCase<"Cache", 1, "cache">,
    I32EnumAttrCase<"Output", 2, "output">,
    I32EnumAttrCase<"Scratch", 3, "scratch">,
    I32EnumAttrCase<"Parameter", 4, "parameter">,
    I32EnumAttrCase<"Status", 5, "status">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_Step : I32EnumAttr<"Step", "a step of a compiled flow", [
    I32EnumAttrCase<"Indexer", 0, "indexer">,
    I32EnumAttrCase<"Cache", 1, "cache">,
    I32EnumAttrCase<"Attend", 2, "attend">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_GridKind : I32EnumAttr<"GridKind",
    "how the runtime sizes a launch's grid (docs/manifest.md)", [
    I32EnumAttrCase<"Host", 0, "host">,
    I32EnumAttrCase<"Rows", 1, "rows">,
    I32EnumAttrCase<"RowSplits", 2, "row_splits">,
    I32EnumAttrCase<"Persistent", 3, "persistent">,
    I32EnumAttrCase<"Items", 4, "items">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_ParamKind : I32EnumAttr<"ParamKind",
    "how a kernel argument is passed", [
    I32EnumAttrCase<"Buffer", 0, "buffer">,
    I32EnumAttrCase<"Scalar", 1, "scalar">]> {
  let cppNamespace = "::mlir::vortex";
  let genSpecializedAttr = 0;
}

def Vortex_LaunchParamAttr : Vortex_Attr<"LaunchParam", "launch_param"> {
  let summary = "one argument of a kernel launch";
  let description = [{
    A buffer names the tensor passed; a scalar names a symbol or a constant
    the runtime passes, of type `dtype` (i32 when absent, or i64), with the
    fixed `value` when the manifest holds it.

    ```mlir
    #vortex.launch_param<name = "q", kind = buffer>
    #vortex.launch_param<name = "topk_ratio_bits", kind = scalar, dtype = i64, value = 0>
    ```
  }];
  let parameters = (ins
    "::mlir::StringAttr":$name,
    "::mlir::vortex::ParamKind":$kind,
    OptionalParameter<"::mlir::Type">:$dtype,
    OptionalParameter<"std::optional<int64_t>">:$value);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isBuffer() const { return getKind() == ParamKind::Buffer; }
  }];
}

def Vortex_LaunchAttr : Vortex_Attr<"Launch", "launch"> {
  let summary = "one kernel launch of a step";
  let description = [{
    The kernel, its grid (`grid`; `persistent` grids have `ctas_per_sm`
    CTAs per SM, `items` grids one CTA per `per_cta` entries of the tensor
    `items_of`), its block of `threads` threads and dynamic `shared_bytes`,
    its arguments in order, and the tensors it reads and writes (absent:
    anything). `pdl` marks a launch that may overlap the one before it
    (vortex-gpu-chain-launches); launches sharing a `choice` are
    alternatives, of which the runtime launches exactly one. `grid_z`
    (default 1) is the grid's fixed z extent (the attend split kernel's
    passes over a row's heads).

    ```mlir
    #vortex.launch<kernel = "quest_score", grid = rows, threads = 128,
                   shared_bytes = 0, params = [#vortex.launch_param<name = "q", kind = buffer>],
                   reads = ["q"], writes = ["score"]>
    ```
  }];
  let parameters = (ins
    "::mlir::StringAttr":$kernel,
    "::mlir::vortex::GridKind":$grid,
    DefaultValuedParameter<"int64_t", "0">:$ctas_per_sm,
    OptionalParameter<"::mlir::StringAttr">:$items_of,
    DefaultValuedParameter<"int64_t", "0">:$per_cta,
    "int64_t":$threads,
    DefaultValuedParameter<"int64_t", "0">:$shared_bytes,
    "::mlir::ArrayAttr":$params,
    OptionalParameter<"::mlir::ArrayAttr">:$reads,
    OptionalParameter<"::mlir::ArrayAttr">:$writes,
    OptionalParameter<"::mlir::BoolAttr">:$pdl,
    OptionalParameter<"::mlir::StringAttr">:$choice,
    DefaultValuedParameter<"int64_t", "1">:$grid_z);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The arguments, each a LaunchParamAttr (the verifier's promise).
    auto getParamList() const {
      return getParams().getAsRange<LaunchParamAttr>();
    }
    /// Whether the launch may overlap the one before it.
    bool isChained() const { return getPdl() && getPdl().getValue(); }
    /// This launch with `pdl` set.
    LaunchAttr withPdl() const;
  }];
}

def Vortex_StepAttr : Vortex_Attr<"Step", "step"> {
  let summary = "one step of a compiled flow: its ABI and its launches";
  let description = [{
    The tensors the step takes, in call order, the ones it writes, and its
    launches in stream order. The attend step carries `decode_refusal` when
    attention over the flow's own selection would not be exact.

    ```mlir
    #vortex.step<args = ["q", "dense_kv_indptr"], writes = ["sparse_kv_indptr"],
                 launches = [...]>
    ```
  }];
  let parameters = (ins
    "::mlir::ArrayAttr":$args,
    "::mlir::ArrayAttr":$writes,
    "::mlir::ArrayAttr":$launches,
    OptionalParameter<"::mlir::StringAttr">:$decode_refusal);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The launches, each a LaunchAttr (the verifier's promise).
    auto getLaunchList() const {
      return getLaunches().getAsRange<LaunchAttr>();
    }
  }];
}

def Vortex_TensorAttr : Vortex_Attr<"Tensor", "tensor"> {
  let summary = "one tensor of the flow ABI";
  let description = [{
    Its role, element type and shape; each extent is an integer or a
    symbol expression (`"rows"`, `"rows+1"`). The status buffer lists its
    `flags`: the bit each input check sets.

    ```mlir
    #vortex.tensor<role = input, dtype = bf16, shape = ["rows", 8, 128]>
    ```
  }];
  let parameters = (ins
    "::mlir::vortex::TensorRole":$role,
    "::mlir::Type":$dtype,
    "::mlir::ArrayAttr":$shape,
    OptionalParameter<"::mlir::DictionaryAttr">:$flags);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Vortex_ManifestAttr : Vortex_Attr<"Manifest", "manifest"> {
  let summary = "what a compiled flow exchanges with its runtime";
  let description = [{
    The module attribute `vortex.manifest` that convert-vortex-to-linalg and
    convert-vortex-to-gpu leave (abi::FlowABI): the flow, the back end, the
    flow's config, the symbols that size its tensors (each named after the
    tensor whose leading extent binds it), the tensors and the steps, keyed
    by step name. vortex-compile writes it as the manifest JSON
    (docs/manifest.md); the runtime reads nothing else.

    ```mlir
    #vortex.manifest<version = 2, flow = "quest", backend = "cuda",
                     source_hash = "...", config = {...}, symbols = {rows = "q"},
                     tensors = {q = #vortex.tensor<...>},
                     steps = {indexer = #vortex.step<...>}>
    ```
  }];
  let parameters = (ins
    "int64_t":$version,
    "::mlir::StringAttr":$flow,
    "::mlir::StringAttr":$backend,
    OptionalParameter<"::mlir::StringAttr">:$source_hash,
    OptionalParameter<"::mlir::DictionaryAttr">:$config,
    OptionalParameter<"::mlir::DictionaryAttr">:$symbols,
    OptionalParameter<"::mlir::DictionaryAttr">:$tensors,
    "::mlir::DictionaryAttr":$steps);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The step named `name`, or null.
    StepAttr getStep(::llvm::StringRef name) const {
      return getSteps().getAs<StepAttr>(name);
    }
    /// This manifest with `steps` in place of its steps.
    ManifestAttr withSteps(::mlir::DictionaryAttr steps) const;
  }];
}

#endif // VORTEX_DIALECT_VORTEXMANIFEST_TD
