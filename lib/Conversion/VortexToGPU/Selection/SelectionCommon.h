//===- SelectionCommon.h - Row helpers of the selection kernels -*- C++ -*-===//
//
// Row helpers of the selection kernels (TopKKernels.cpp and RowSelection.cpp:
// the top-k; UnionKernels.cpp: the trtllm union), defined in
// SelectionCommon.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_SELECTIONCOMMON_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_SELECTIONCOMMON_H

#include "../Collectives.h"

namespace mlir::vortex::gpugen {

/// i1 constants true and false.
Value trueValue(Gen &g);
Value falseValue(Gen &g);

/// Row r's end in sparse_kv_indptr (and its 0 at row 0); one thread.
void storeSparseIndptr(Gen &g, Value sparsePtr, Value r, Value end);

/// Records row r's malformed dense_kv_indptr (the guard); one thread.
void recordBadIndptr(Gen &g, Value status, Value indptr, Value r);

/// buffer[i] as an index if i is within the buffer, else 0.
Value loadIndexOrZero(Gen &g, Value buffer, Value i);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_SELECTIONCOMMON_H
