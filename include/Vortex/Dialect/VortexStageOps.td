//===- VortexStageOps.td - Stage boundaries of a split step -*- tablegen -*-===//
//
// The ops `vortex-split-custom-calls` puts at the cuts of an indexer split
// around its custom ops (docs/design.md, "Custom ops"). A separate
// TableGen unit: only the split, the verifier and the lowering see them.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_VORTEXSTAGEOPS_TD
#define VORTEX_DIALECT_VORTEXSTAGEOPS_TD

include "Vortex/Dialect/VortexTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// VortexOps.td's constraint, restated: including that file would emit its
// ops here too.
def Vortex_StageValue : Type<And<[
    CPred<"::llvm::isa<::mlir::vortex::VTensorType>($_self)">,
    CPred<"::llvm::isa<::mlir::FloatType>(::llvm::cast<::mlir::vortex::VTensorType>($_self).getElementType())">]>,
    "vtensor of floating-point values", "::mlir::vortex::VTensorType">;

class Vortex_StageOp<string mnemonic, list<Trait> traits = []>
    : Op<Vortex_Dialect, mnemonic, traits>;

def Vortex_StageInOp : Vortex_StageOp<"stage_in", [Pure]> {
  let summary = "a value an earlier stage of the step computed";
  let description = [{
    In a stage flow (`vortex-split-custom-calls`), the value `name` that an
    earlier stage exported or a custom op returned: an indexer argument
    (manifest role `input`, `[total | rows, d0, d1]` f32) that the runtime
    allocates and passes between the stages.

    ```mlir
    %s = vortex.stage_in "call0.out"
        : !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Vortex_StageValue:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Vortex_StageOutOp : Vortex_StageOp<"stage_out"> {
  let summary = "a value a later stage or a custom op needs";
  let description = [{
    In a stage flow, exports `value` as `name`: an indexer output (manifest
    role `output`, `[total | rows, d0, d1]` f32) the runtime hands to the
    custom op or to a later stage. A stage with exports ends without a
    selection.

    ```mlir
    vortex.stage_out %score as "call0.in0"
        : !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Vortex_StageValue:$value, StrAttr:$name);
  let assemblyFormat = "$value `as` $name attr-dict `:` type($value)";
  let hasVerifier = 1;
}

#endif // VORTEX_DIALECT_VORTEXSTAGEOPS_TD
