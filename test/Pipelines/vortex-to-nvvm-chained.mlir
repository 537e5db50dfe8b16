// vortex-to-nvvm chains a flow's launches (vortex-gpu-chain-launches, after
// convert-vortex-to-gpu): the score kernel lets the top-k launch once its
// CTAs have started; the top-k reads its row bounds, sums the kept counts
// of the rows before it (its offset, a CTA reduction over shared memory)
// and stores its sparse indptr entry before it waits, and waits before the
// first score it reads; the manifest marks the top-k's launch pdl. The
// cache step is one launch and is left alone. chain-launches=false, and a
// chip before sm_90, leave every kernel and the manifest unchained.
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
// CHECK-SAME: pdl = true, choice = "block_sparse_attention_indexer_topk"
// CHECK-SAME: kernel = "block_sparse_attention_indexer_topk_t256"
// CHECK-SAME: pdl = true, choice = "block_sparse_attention_indexer_topk"
// CHECK-SAME: kernel = "block_sparse_attention_indexer_topk_t128"
// CHECK-SAME: pdl = true, choice = "block_sparse_attention_indexer_topk"
// CHECK-LABEL: llvm.func @block_sparse_attention_indexer_w0(
// CHECK: nvvm.griddepcontrol launch_dependents
// CHECK-NOT: griddepcontrol
// Before the first wait: the row's bounds (i32 loads), the offset's
// barriers and its store of the sparse indptr (i32, global); no score (f32)
// is read before it. Two more waits are on paths that need them: the
// per-pick selection of k > 4096 and the guard's status record; a last
// one before the return (every thread waits before it exits).
// CHECK-LABEL: llvm.func @block_sparse_attention_indexer_topk(
// CHECK-NOT: griddepcontrol
// CHECK-NOT: -> f32
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> i32
// CHECK-NOT: -> f32
// CHECK: nvvm.barrier0
// CHECK-NOT: -> f32
// CHECK: llvm.store %{{.+}}, %{{.+}} : i32, !llvm.ptr{{$}}
// CHECK-NOT: -> f32
// CHECK: nvvm.griddepcontrol wait
// CHECK-NEXT: llvm.getelementptr
// CHECK-NEXT: llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK: nvvm.griddepcontrol wait
// CHECK: nvvm.griddepcontrol wait
// CHECK: nvvm.griddepcontrol wait
// CHECK-NEXT: llvm.return
// CHECK-NOT: griddepcontrol
// The other two alternatives are placed the same way (chained to the score
// kernel, not to each other).
// CHECK-LABEL: llvm.func @block_sparse_attention_indexer_topk_t256(
// CHECK-NOT: griddepcontrol
// CHECK-NOT: -> f32
// CHECK: nvvm.griddepcontrol wait
// CHECK-NEXT: llvm.getelementptr
// CHECK-NEXT: llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK-LABEL: llvm.func @block_sparse_attention_indexer_topk_t128(
// CHECK-NOT: griddepcontrol
// CHECK-NOT: -> f32
// CHECK: nvvm.griddepcontrol wait
// CHECK-NEXT: llvm.getelementptr
// CHECK-NEXT: llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK-LABEL: llvm.func @block_sparse_attention_cache_w0(
// CHECK-NOT: griddepcontrol
// The attend step: the split kernel lets the combine launch, which waits
// before it reads the partials.
// CHECK-LABEL: llvm.func @block_sparse_attention_attend_split(
// CHECK: nvvm.griddepcontrol launch_dependents
// CHECK-LABEL: llvm.func @block_sparse_attention_attend_combine(
// CHECK: nvvm.griddepcontrol wait

// OFF-NOT: pdl
// OFF-NOT: griddepcontrol
