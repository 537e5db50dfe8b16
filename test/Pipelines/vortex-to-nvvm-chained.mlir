// vortex-to-nvvm chains a flow's launches (vortex-gpu-chain-launches, after
// convert-vortex-to-gpu): the score kernel lets the top-k launch once its
// CTAs have started, the top-k reads its row bounds and then waits for the
// scores; the manifest marks the top-k's launch pdl. The cache step is one
// launch and is left alone. chain-launches=false, and a chip before sm_90,
// leave every kernel and the manifest unchained.
//
// RUN: vortex-opt %examples/block_sparse_attention.mlir \
// RUN:   --vortex-nvvm-stage-lower | FileCheck %s
// RUN: vortex-opt %examples/block_sparse_attention.mlir \
// RUN:   --vortex-nvvm-stage-lower="chain-launches=false" | FileCheck %s --check-prefix=OFF
// RUN: vortex-opt %examples/block_sparse_attention.mlir \
// RUN:   --vortex-nvvm-stage-lower="chip=sm_80" | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: module attributes
// CHECK-SAME: kernel = "block_sparse_attention_cache_w0"
// CHECK-NOT: pdl
// CHECK-SAME: kernel = "block_sparse_attention_indexer_w0"
// CHECK-NOT: pdl
// CHECK-SAME: kernel = "block_sparse_attention_indexer_topk"
// CHECK-SAME: pdl = true
// CHECK-LABEL: llvm.func @block_sparse_attention_indexer_w0(
// CHECK: nvvm.griddepcontrol launch_dependents
// CHECK-NOT: griddepcontrol
// The row's bounds, indptr[row] and indptr[row + 1] (i32), come before the
// wait; so do the memref extents (i64, from the descriptor's alloca).
// CHECK-LABEL: llvm.func @block_sparse_attention_indexer_topk(
// CHECK-NOT: griddepcontrol
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> i32
// CHECK-NOT: griddepcontrol
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> i32
// CHECK-NOT: llvm.load
// CHECK: nvvm.griddepcontrol wait
// CHECK-NOT: griddepcontrol
// CHECK-LABEL: llvm.func @block_sparse_attention_cache_w0(
// CHECK-NOT: griddepcontrol

// OFF-NOT: pdl
// OFF-NOT: griddepcontrol
