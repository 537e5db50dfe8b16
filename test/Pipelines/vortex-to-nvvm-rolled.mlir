// The top-k's loops reach LLVM with their loop metadata: scf-to-cf moves the
// annotation onto each loop's back edge (llvm.br), where the translation
// makes it llvm.loop metadata; the score kernel's loops carry none.
//
// RUN: vortex-opt %examples/block_sparse_attention.mlir \
// RUN:   --vortex-nvvm-stage-lower | FileCheck %s

// CHECK: #[[$UNROLL:.+]] = #llvm.loop_unroll<runtimeDisable = true>
// CHECK: #[[$ROLLED:.+]] = #llvm.loop_annotation<unroll = #[[$UNROLL]]>
// CHECK-LABEL: llvm.func @block_sparse_attention_indexer_w0(
// CHECK-NOT: loop_annotation
// CHECK-LABEL: llvm.func @block_sparse_attention_indexer_topk(
// CHECK: llvm.br ^{{.*}} {loop_annotation = #[[$ROLLED]]}
// CHECK-LABEL: llvm.func @block_sparse_attention_cache_w0(
// CHECK-NOT: loop_annotation
