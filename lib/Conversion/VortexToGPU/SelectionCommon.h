//===- SelectionCommon.h - Helpers the top-k and union kernels share -*- C++ -*-===//
//
// Row helpers of the selection kernels (SelectionKernels.cpp: the top-k;
// UnionKernels.cpp: the trtllm union), defined in SelectionKernels.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTIONCOMMON_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTIONCOMMON_H

#include "Collectives.h"

namespace mlir::vortex::gpugen {

/// An i1 constant false.
Value falseValue(Gen &g);

/// Row r's end in sparse_kv_indptr (and its 0 at row 0); one thread.
void storeSparseIndptr(Gen &g, Value sparsePtr, Value r, Value end);

/// Records row r's malformed dense_kv_indptr (the guard); one thread.
void recordBadIndptr(Gen &g, Value status, Value indptr, Value r);

/// buffer[i] as an index if i is within the buffer, else 0.
Value loadIndexOrZero(Gen &g, Value buffer, Value i);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTIONCOMMON_H
