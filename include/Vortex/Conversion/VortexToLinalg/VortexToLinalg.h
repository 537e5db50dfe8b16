//===- VortexToLinalg.h - Vortex to linalg conversion patterns --*- C++ -*-===//
//
// The pieces of `convert-vortex-to-linalg` for compilers that drive their own
// dialect conversion: the type converter and one populate function per op
// family (StableHLO's StablehloToLinalg*.cpp are the model).
//
// A flow converts as a whole: populateVortexFlowToFuncPatterns turns each
// `vortex.flow` into its step functions (docs/contract.md) and the family
// patterns lower the ops inlined into them. Outside a flow, ops whose operands
// and result are all batched or parameter vtensors convert too (a function
// over vtensors needs an upstream signature conversion for its boundary);
// ragged and paged values are addressed through a flow's block lists and do
// not convert there.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_CONVERSION_VORTEXTOLINALG_VORTEXTOLINALG_H
#define VORTEX_CONVERSION_VORTEXTOLINALG_VORTEXTOLINALG_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
class ConversionTarget;
namespace vortex {

/// `!vortex.vtensor<L x D0 x D1 x T, F>` to `tensor<L x D0' x D1' x E>`: the
/// leading axis is the format's domain (batched: rows; ragged: CSR positions
/// or the completed blocks; paged and slotted: pool blocks; parameter: one
/// row), D0' x D1' are the computed extents (padded once `vortex-pad` made
/// padding explicit) and E is f32 for floats (the computation type) and the
/// element type itself for integers.
class VortexToLinalgTypeConverter : public TypeConverter {
public:
  VortexToLinalgTypeConverter();
};

/// Unary and binary elementwise ops, by UnaryElementwiseOpInterface and
/// BinaryElementwiseOpInterface.
void populateVortexElementwiseToLinalgPatterns(TypeConverter &converter,
                                               RewritePatternSet &patterns);
/// Plain and interleaved reductions, by ReductionOpInterface.
void populateVortexReductionToLinalgPatterns(TypeConverter &converter,
                                             RewritePatternSet &patterns);
/// gemm and gemv.
void populateVortexContractionToLinalgPatterns(TypeConverter &converter,
                                               RewritePatternSet &patterns);
/// Row-segment scans: softmax, normalize, conv1d (flow only).
void populateVortexRowSegmentToLinalgPatterns(TypeConverter &converter,
                                              RewritePatternSet &patterns);
/// transpose, reshape, kron, mask_slice, mask_lanes.
void populateVortexLayoutToLinalgPatterns(TypeConverter &converter,
                                          RewritePatternSet &patterns);
/// load, save, write, fill (flow only).
void populateVortexStateToLinalgPatterns(TypeConverter &converter,
                                         RewritePatternSet &patterns);
/// topk, approx_topk, trtllm_topk, union (flow only).
void populateVortexSelectionToLinalgPatterns(TypeConverter &converter,
                                             RewritePatternSet &patterns);
/// attend (builtin tensors; in a flow's attend step or standalone): an
/// exact f32 two-pass softmax, a row at a time.
void populateVortexAttentionToLinalgPatterns(TypeConverter &converter,
                                             RewritePatternSet &patterns);
/// `vortex.flow` to its step functions, and `vortex.kernel` inlined.
void populateVortexFlowToFuncPatterns(TypeConverter &converter,
                                      RewritePatternSet &patterns);

/// Every pattern above.
void populateVortexToLinalgConversionPatterns(TypeConverter &converter,
                                              RewritePatternSet &patterns);

/// Marks the vortex dialect illegal and what the patterns produce legal.
void configureVortexToLinalgConversionTarget(ConversionTarget &target);

/// Removes the markers the flow patterns leave on step functions for the op
/// patterns (the flow config and the domain values); run after the
/// conversion.
void removeVortexToLinalgMarkers(Operation *root);

} // namespace vortex
} // namespace mlir

#endif // VORTEX_CONVERSION_VORTEXTOLINALG_VORTEXTOLINALG_H
