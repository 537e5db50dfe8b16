//===- VortexOps.h - Vortex operations ---------------------------*- C++ -*-===//

#ifndef VORTEX_DIALECT_VORTEXOPS_H
#define VORTEX_DIALECT_VORTEXOPS_H

#include "Vortex/Dialect/VortexDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::vortex::detail {
// Shared verifiers of the op classes (VortexOps.cpp).
LogicalResult verifyReduceOp(Operation *op, int64_t dim);
LogicalResult verifyInterleaveOp(Operation *op, int64_t dim, int64_t factor);
LogicalResult verifyBroadcastingBinaryOp(Operation *op);
LogicalResult verifySameShapeOp(Operation *op);
} // namespace mlir::vortex::detail

#include "Vortex/Dialect/VortexInterfaces.h.inc"

#define GET_OP_CLASSES
#include "Vortex/Dialect/VortexOps.h.inc"

namespace mlir::vortex {
/// The field `op` writes (vortex.write, vortex.fill, vortex.save or
/// vortex.learned_descriptor), or null: the one list of field writers.
Value getWrittenField(Operation *op);
} // namespace mlir::vortex

#endif // VORTEX_DIALECT_VORTEXOPS_H
