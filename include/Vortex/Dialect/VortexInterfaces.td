//===- VortexInterfaces.td - Vortex op interfaces -----------*- tablegen -*-===//

#ifndef VORTEX_DIALECT_VORTEXINTERFACES_TD
#define VORTEX_DIALECT_VORTEXINTERFACES_TD

include "mlir/IR/OpBase.td"

def Vortex_ScheduledOpInterface : OpInterface<"ScheduledOpInterface"> {
  let cppNamespace = "::mlir::vortex";
  let description = [{
    Every vortex op says how vortex_torch schedules it: `W` ops fuse into a
    per-workload kernel, `S` ops run standalone and are fusion barriers.
  }];
  let methods = [
    InterfaceMethod<"The op's schedule.", "::mlir::vortex::Schedule",
      "getSchedule", (ins), "", [{ return ::mlir::vortex::Schedule::W; }]>,
  ];
}

def Vortex_ReductionOpInterface : OpInterface<"ReductionOpInterface"> {
  let cppNamespace = "::mlir::vortex";
  let description = "A keep-dim reduction (plain or interleaved) of one vtensor.";
  let methods = [
    InterfaceMethod<"The reduction kind.", "::mlir::vortex::ReduceKind",
      "getReduceKind", (ins)>,
    InterfaceMethod<"The reduced axis.", "int64_t", "getReducedDim", (ins),
      "", [{ return $_op.getDim(); }]>,
    InterfaceMethod<[{Entries folded into one: `factor` for an interleaved
      reduction, 0 (the whole axis) for a plain one.}],
      "int64_t", "getGroupFactor", (ins), "", [{ return 0; }]>,
  ];
}

def Vortex_UnaryElementwiseOpInterface : OpInterface<"UnaryElementwiseOpInterface"> {
  let cppNamespace = "::mlir::vortex";
  let description = "A unary elementwise op with the (alpha, beta) knobs.";
  let methods = [
    InterfaceMethod<"The unary kind.", "::mlir::vortex::UnaryKind",
      "getUnaryKind", (ins)>,
    InterfaceMethod<"alpha of the op's formula (its default when absent).",
      "double", "getAlphaValue", (ins),
      [{ return $_op.getAlpha().convertToDouble(); }]>,
    InterfaceMethod<"beta of the op's formula (its default when absent).",
      "double", "getBetaValue", (ins),
      [{ return $_op.getBeta().convertToDouble(); }]>,
  ];
}

def Vortex_BinaryElementwiseOpInterface : OpInterface<"BinaryElementwiseOpInterface"> {
  let cppNamespace = "::mlir::vortex";
  let description = "A broadcasting binary elementwise op.";
  let methods = [
    InterfaceMethod<"The binary kind.", "::mlir::vortex::BinaryKind",
      "getBinaryKind", (ins)>,
  ];
}

#endif // VORTEX_DIALECT_VORTEXINTERFACES_TD
