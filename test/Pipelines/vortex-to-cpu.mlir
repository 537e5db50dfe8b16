// The vortex-to-cpu pipeline and each of its stages, on a shipped flow.
// RUN: vortex-opt %examples/block_sparse_attention.mlir --vortex-to-cpu | FileCheck %s --check-prefix=LLVM
// (Upstream mlir-translate keeps the vortex.manifest attribute opaque: it
// does not know the vortex dialect, and the translation ignores it.)
// RUN: vortex-opt %examples/block_sparse_attention.mlir --vortex-to-cpu | mlir-translate --allow-unregistered-dialect --mlir-to-llvmir | FileCheck %s --check-prefix=IR
// RUN: vortex-opt %examples/block_sparse_attention.mlir --vortex-cpu-stage-linalg | FileCheck %s --check-prefix=LINALG
// RUN: vortex-opt %examples/block_sparse_attention.mlir --vortex-cpu-stage-linalg --vortex-cpu-stage-bufferize | FileCheck %s --check-prefix=BUF
// RUN: vortex-opt %examples/block_sparse_attention.mlir --vortex-cpu-stage-linalg --vortex-cpu-stage-bufferize --vortex-cpu-stage-llvm | FileCheck %s --check-prefix=LLVM
// Every shipped flow goes through the whole pipeline.
// RUN: for f in %examples/*.mlir; do vortex-opt $f --vortex-to-cpu -o /dev/null || exit 1; done

// The first stage attaches the CPU manifest; the later stages keep it, and
// its host kernels are the C interfaces the last stage emits.
// LINALG: module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "block_sparse_attention", backend = "cpu"
// LINALG-SAME: kernel = "_mlir_ciface_block_sparse_attention_cache"
// LINALG-SAME: kernel = "_mlir_ciface_block_sparse_attention_indexer"
// LINALG-SAME: ]>}>} {
// LINALG-NOT: vortex.
// LINALG: func.func @block_sparse_attention_indexer
// LINALG: linalg.generic
// LINALG: func.func @block_sparse_attention_cache
// LINALG: linalg.generic

// BUF: module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "block_sparse_attention", backend = "cpu"
// BUF-SAME: ]>}>} {
// BUF-NOT: tensor<
// BUF: func.func @block_sparse_attention_indexer
// BUF-SAME: memref<?x8x128xf32>
// BUF: memref.alloc
// BUF: memref.dealloc
// BUF: func.func @block_sparse_attention_cache

// LLVM: module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "block_sparse_attention", backend = "cpu"
// LLVM-SAME: steps = {attend = #vortex.step<args = ["q", "k", "v", "kv_indptr", "kv_indices", "kv_last_len", "o", "lse", "sm_scale"], writes = ["o", "lse"]
// LLVM-SAME: kernel = "_mlir_ciface_block_sparse_attention_attend"
// LLVM-SAME: cache = #vortex.step<args = ["k", "v", "centroids", "block_ids"], writes = ["centroids"]
// LLVM-SAME: kernel = "_mlir_ciface_block_sparse_attention_cache"
// LLVM-SAME: indexer = #vortex.step<args = ["q", "k", "v", "centroids", "dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices"], writes = ["sparse_kv_indptr", "sparse_kv_indices"]
// LLVM-SAME: kernel = "_mlir_ciface_block_sparse_attention_indexer"
// LLVM-NOT: memref.
// LLVM-NOT: linalg.
// LLVM-NOT: scf.
// LLVM: llvm.func @block_sparse_attention_indexer
// LLVM: llvm.call @malloc
// LLVM: llvm.call @free
// LLVM: llvm.func @_mlir_ciface_block_sparse_attention_indexer
// LLVM: llvm.func @block_sparse_attention_cache
// LLVM: llvm.func @_mlir_ciface_block_sparse_attention_cache

// IR: define void @_mlir_ciface_block_sparse_attention_indexer(ptr
// IR: define void @_mlir_ciface_block_sparse_attention_cache(ptr
