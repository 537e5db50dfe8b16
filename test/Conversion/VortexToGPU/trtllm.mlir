// RUN: vortex-opt %s --vortex-fuse --convert-vortex-to-gpu | FileCheck %s
//
// The PTX assembles (vortex-to-nvvm, then ptxas).
// REQUIRES: ptxas
// RUN: rm -rf %t && vortex-compile %s --target=sm_90 -o %t
// RUN: od -An -c -N4 %t/f.cubin | FileCheck %s --check-prefix=ELF
// ELF: 177   E   L   F

// The trtllm selection on the GPU: each TopK(k) is the radix-select kernel
// writing a block table at the row's dense positions (i32 scratch, -1 in
// unused slots) and a count per row (i32 scratch); the union is two kernels,
// the deduplicated rows into scratch, then packed into the sparse CSR.
!p = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!r = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!b = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!t = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!l = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
#cfg = #vortex.config<block_size = 1, page_size = 1, head_dim = 1, group_size = 1, topk_val = 1, topk_ratio = 0.0, reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16, kv_dtype = bf16>
vortex.flow @f config = #cfg fields(c = [1, 1])
cache(%k: !p, %v: !p, %c: !p) {
  %x = vortex.max %k {dim = 1 : i64} : !p -> !r
  vortex.write %x into %c : !r into !p
}
indexer(%q: !b, %o: !o, %k: !p, %v: !p, %c: !p) {
  %s = vortex.load %c : !p -> !r
  %n = vortex.add_mul %s {alpha = 0.0 : f32, beta = -1.0 : f32} : !r -> !r
  %t0, %l0 = vortex.trtllm_topk %s {k = 4 : i64} : !r -> !t, !l
  %t1, %l1 = vortex.trtllm_topk %n {k = 2 : i64} : !r -> !t, !l
  vortex.union (%t0, %l0), (%t1, %l1) into %o : !t, !l into !o
}

// The tables and counts are i32 scratch (the tensors precede the steps).
// CHECK: tensors = {
// CHECK-SAME: scratch{{[0-9]+}} = #vortex.tensor<role = scratch, dtype = i32, shape = ["total", 1, 1]>
// CHECK-SAME: scratch{{[0-9]+}} = #vortex.tensor<role = scratch, dtype = i32, shape = ["rows", 1, 1]>
// The launch order and buffers.
// CHECK-SAME: indexer = #vortex.step<args
// CHECK-SAME: writes = ["sparse_kv_indptr", "sparse_kv_indices"]
// CHECK-SAME: kernel = "f_indexer_trtllm{{[0-9]+}}", {{[^>]*}}params = [{{[^]]*}}#vortex.launch_param<name = "[[SL0:scratch[0-9]+]]", kind = buffer>, #vortex.launch_param<name = "[[BT0:scratch[0-9]+]]", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>]
// CHECK-SAME: writes = ["[[SL0]]", "[[BT0]]", "status"]
// CHECK-SAME: kernel = "f_indexer_trtllm{{[0-9]+}}", {{[^>]*}}params = [{{[^]]*}}#vortex.launch_param<name = "[[SL1:scratch[0-9]+]]", kind = buffer>, #vortex.launch_param<name = "[[BT1:scratch[0-9]+]]", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>]
// CHECK-SAME: kernel = "f_indexer_union{{[0-9]+}}_rows"
// CHECK-SAME: reads = ["dense_kv_indptr", "dense_kv_indices", "[[BT0]]", "[[SL0]]", "[[BT1]]", "[[SL1]]"]
// CHECK-SAME: writes = ["[[MERGED:scratch[0-9]+]]", "[[COUNTS:scratch[0-9]+]]", "status"]
// CHECK-SAME: kernel = "f_indexer_union{{[0-9]+}}_pack"
// CHECK-SAME: reads = ["dense_kv_indptr", "[[MERGED]]", "[[COUNTS]]"]
// CHECK-SAME: writes = ["sparse_kv_indptr", "sparse_kv_indices", "status"]

// TopK(k): the budget is fixed (bos + k + eos); unused slots get -1.
// CHECK-LABEL: gpu.func @f_indexer_trtllm
// CHECK-SAME: known_block_size = array<i32: 512, 1, 1>
// CHECK: arith.constant 6 : index
// CHECK: arith.constant -1 : i32
// CHECK: gpu.shuffle xor
// CHECK: arith.maxui
// CHECK: memref.atomic_rmw addi
// CHECK: gpu.return

// Union rows: ranks by a CTA-wide scan of the kept flags (warp sums in
// shared memory), the row's last block pinned after the kept ones.
// CHECK-LABEL: gpu.func @f_indexer_union{{[0-9]+}}_rows
// CHECK-SAME: workgroup(%{{.+}} : memref<8xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: gpu.shuffle up
// CHECK: gpu.barrier
// CHECK: gpu.return

// Union pack: the row's offset is the sum of the earlier rows' counts (a
// CTA reduction through shared memory).
// CHECK-LABEL: gpu.func @f_indexer_union{{[0-9]+}}_pack
// CHECK-SAME: workgroup(%{{.+}} : memref<8xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: gpu.return
