//===- VortexStageOps.h - Stage boundaries of a split step -----*- C++ -*-===//

#ifndef VORTEX_DIALECT_VORTEXSTAGEOPS_H
#define VORTEX_DIALECT_VORTEXSTAGEOPS_H

#include "Vortex/Dialect/VortexOps.h"

#define GET_OP_CLASSES
#include "Vortex/Dialect/VortexStageOps.h.inc"

#endif // VORTEX_DIALECT_VORTEXSTAGEOPS_H
