//===- VortexTypes.td - Vortex types ------------------------*- tablegen -*-===//

#ifndef VORTEX_DIALECT_VORTEXTYPES_TD
#define VORTEX_DIALECT_VORTEXTYPES_TD

include "Vortex/Dialect/VortexBase.td"

class Vortex_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Vortex_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Vortex_VTensorType : Vortex_Type<"VTensor", "vtensor"> {
  let summary = "rank-3 metadata tensor [L, D0, D1] with a format";
  let description = [{
    A vortex_torch `vTensor`: shape `[L, D0, D1]` where `L` (the leading axis,
    static or `?`) is addressed as the format says and `D0`, `D1` are static.
    Element types: `bf16`, `f16`, `f32`, `f8E4M3FN`, `f8E5M2`, and `i32` for
    index tensors (the top-k output and block tables).

    The padded shape rounds `D0` and `D1` up to the next power of two (`L` is
    never padded): `getPaddedShape()`. It is implicit until the padding pass
    makes it explicit, after which the type prints it:

    ```mlir
    !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
    !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "shape [L, D0, D1]">:$shape,
    "::mlir::Type":$elementType,
    "::mlir::vortex::FormatAttr":$format,
    DefaultValuedParameter<"bool", "false", "padding made explicit">:$explicitPadding);
  let builders = [
    TypeBuilderWithInferredContext<(ins "::llvm::ArrayRef<int64_t>":$shape,
        "::mlir::Type":$elementType, "::mlir::vortex::Format":$format), [{
      return $_get(elementType.getContext(), shape, elementType,
                   FormatAttr::get(elementType.getContext(), format), false);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static constexpr int64_t kDynamic = ::mlir::ShapedType::kDynamic;
    int64_t getL() const { return getShape()[0]; }
    int64_t getD0() const { return getShape()[1]; }
    int64_t getD1() const { return getShape()[2]; }
    /// Inner extent along `dim` (1 or 2).
    int64_t getInner(unsigned dim) const { return getShape()[dim]; }
    ::mlir::vortex::Format getFormatKind() const { return getFormat().getValue(); }
    bool isBatched() const { return getFormatKind() == Format::Batched; }
    bool isRagged() const { return getFormatKind() == Format::Ragged; }
    bool isPaged() const { return getFormatKind() == Format::Paged; }
    bool isParameter() const { return getFormatKind() == Format::Parameter; }
    bool isSlotted() const { return getFormatKind() == Format::Slotted; }
    /// A parameter over the tile bound: never held, only streamed by GeMM's
    /// parameter path (docs/contract.md, "Bounds").
    bool isStreamedParameter() const;
    /// The shape with D0 and D1 rounded up to powers of two; L unchanged.
    ::llvm::SmallVector<int64_t, 3> getPaddedShape() const;
    /// True iff D0 or D1 is not a power of two.
    bool needsPadding() const;
    int64_t getNumInnerElements() const { return getD0() * getD1(); }
    VTensorType withFormat(::mlir::vortex::Format format) const;
    VTensorType withShape(::llvm::ArrayRef<int64_t> shape) const;
    VTensorType withElementType(::mlir::Type type) const;
    VTensorType withExplicitPadding(bool explicitPadding = true) const;
  }];
}

#endif // VORTEX_DIALECT_VORTEXTYPES_TD
