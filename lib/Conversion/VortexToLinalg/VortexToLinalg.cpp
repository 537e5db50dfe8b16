//===- VortexToLinalg.cpp - Lower vortex flows to linalg on tensors -------===//
//
// convert-vortex-to-linalg: a dialect conversion with the family patterns
// (one file each) and the type converter. Each flow becomes `@<flow>_indexer`,
// `@<flow>_cache` and `@<flow>_attend` (docs/contract.md). A vtensor becomes a
// `tensor<? x D0 x D1 x f32>` whose leading axis is its format's domain;
// operands of a workload op are first brought into the result's domain by
// explicit gathers (paged by block id, batched by row), so every op is a
// same-domain linalg.generic; fusing those gathers into their consumers is
// the job of the linalg fusion passes.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/Passes.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"
#include "Vortex/Dialect/FlowABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_CONVERTVORTEXTOLINALG
#include "Vortex/Conversion/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

VortexToLinalgTypeConverter::VortexToLinalgTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](VTensorType t) -> Type {
    // Parameters keep their static single row.
    return RankedTensorType::get({t.getShape()[0],
                                  LinalgBuilder::computeExtent(t, 1),
                                  LinalgBuilder::computeExtent(t, 2)},
                                 loweredElementType(t));
  });
}

void mlir::vortex::populateVortexToLinalgConversionPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  populateVortexFlowToFuncPatterns(converter, patterns);
  populateVortexElementwiseToLinalgPatterns(converter, patterns);
  populateVortexReductionToLinalgPatterns(converter, patterns);
  populateVortexContractionToLinalgPatterns(converter, patterns);
  populateVortexRowSegmentToLinalgPatterns(converter, patterns);
  populateVortexLayoutToLinalgPatterns(converter, patterns);
  populateVortexStateToLinalgPatterns(converter, patterns);
  populateVortexSelectionToLinalgPatterns(converter, patterns);
  populateVortexAttentionToLinalgPatterns(converter, patterns);
}

void mlir::vortex::configureVortexToLinalgConversionTarget(
    ConversionTarget &target) {
  target.addIllegalDialect<VortexDialect>();
  target.addLegalDialect<arith::ArithDialect,
                         bufferization::BufferizationDialect,
                         func::FuncDialect, linalg::LinalgDialect,
                         math::MathDialect, memref::MemRefDialect,
                         scf::SCFDialect, tensor::TensorDialect>();
}

void mlir::vortex::removeVortexToLinalgMarkers(Operation *root) {
  root->walk([](Operation *op) {
    op->removeAttr(kConfigMarker);
    op->removeAttr(kDomainMarker);
    op->removeAttr(kBindsMarker);
    op->removeAttr(kInt4Marker);
  });
}

namespace {
struct ConvertVortexToLinalgPass
    : public vortex::impl::ConvertVortexToLinalgBase<
          ConvertVortexToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Vortex values only have a meaning inside a flow (their formats are
    // addressed through the flow's CSR): reject stray ops before changing
    // anything.
    WalkResult stray = module.walk<WalkOrder::PreOrder>([](Operation *op) {
      // attend works on builtin tensors: it needs no flow.
      if (isa<FlowOp>(op) || isa<AttendOp>(op))
        return WalkResult::skip();
      if (!isa<VortexDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitOpError("outside a vortex.flow cannot be lowered: its formats "
                      "are addressed through a flow's block lists");
      return WalkResult::interrupt();
    });
    if (stray.wasInterrupted())
      return signalPassFailure();

    // The manifest describes one flow: a module of several has none.
    SmallVector<FlowOp> flows(module.getOps<FlowOp>());
    std::optional<abi::FlowABI> manifestABI;
    if (flows.size() == 1) {
      manifestABI = abi::FlowABI::get(flows.front(), abi::Storage::F32);
      std::string prefix = "_mlir_ciface_" + manifestABI->flow;
      manifestABI->addHostStep(abi::Step::Indexer, prefix + "_indexer");
      manifestABI->addHostStep(abi::Step::Cache, prefix + "_cache");
      manifestABI->addHostStep(abi::Step::Attend, prefix + "_attend");
    }

    VortexToLinalgTypeConverter converter;
    RewritePatternSet patterns(&getContext());
    populateVortexToLinalgConversionPatterns(converter, patterns);
    ConversionTarget target(getContext());
    configureVortexToLinalgConversionTarget(target);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    removeVortexToLinalgMarkers(module);
    if (manifestABI) {
      OpBuilder b(module.getContext());
      module->setAttr(abi::kManifestAttrName,
                      manifestABI->toManifest(b, "cpu"));
    }
  }
};
} // namespace
