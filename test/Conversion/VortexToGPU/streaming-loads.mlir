// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=streaming-loads=false | FileCheck %s --check-prefix=OFF
// The vortex-to-nvvm option reaches the pass, and the marked loads leave
// the NVVM stage as inline ld.global.L1::no_allocate.
// RUN: vortex-opt %s --vortex-nvvm-stage-lower | FileCheck %s --check-prefix=NVVM
// RUN: vortex-opt %s --vortex-nvvm-stage-lower="to-gpu=streaming-loads=false" | FileCheck %s --check-prefix=NVVM-OFF
// With a lane's 32 bytes contiguous, a 32-byte load becomes two 16-byte
// ones, the second at +16.
// RUN: vortex-opt %s --vortex-nvvm-stage-lower="to-gpu=sector-slices=false" | FileCheck %s --check-prefix=NVVM-WIDE
//
// Streaming loads (docs/gpu.md, "Streaming loads"): a workload kernel's
// rows read once (a paged row gathered by block id, a ragged row at a CSR
// position) are loaded nontemporal, unless the kernel writes that buffer
// (a saved field, read and stored back by the same lanes). Rows read for
// every block (the batched q, a parameter) are cached as before.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @streamed
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(cent = [1, 128], acc = [1, 128])
cache(%k: !kv, %v: !kv, %cent: !c, %acc: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %cent : !cr into !c
  vortex.fill %acc {value = 0.000000e+00 : f32} : !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %cent: !c, %acc: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %a = vortex.load %acc : !c -> !cr
  %n = vortex.add %a, %cent {alpha = 5.000000e-01 : f32} : (!cr, !c) -> !cr
  vortex.save %n into %acc : !cr into !c
  %s = vortex.gemm %qm, %n : (!qm, !cr) -> !s
  vortex.topk %s into %o : !s into !o
}

// Parameters of the score kernel: dense_kv_indptr, dense_kv_indices, rows,
// acc, cent, q, scratch0, status, num_blocks. Per item (two an iteration):
// the saved field acc cached, the gathered cent nontemporal; q per row,
// cached.
// CHECK-LABEL: gpu.func @streamed_indexer_w0(
// CHECK-SAME: %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: i32, %[[ACC:[^:]+]]: memref<?xbf16>, %[[CENT:[^:]+]]: memref<?xbf16>, %[[Q:[^:]+]]: memref<?xbf16>,
// (Each lane's 32 bytes of a row as two 16-byte slices, plan.mlir.)
// CHECK-COUNT-2: vector.load %[[ACC]][%{{.+}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-COUNT-2: vector.load %[[CENT]][%{{.+}}] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-COUNT-2: vector.load %[[ACC]][%{{.+}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-COUNT-2: vector.load %[[CENT]][%{{.+}}] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-COUNT-2: vector.load %[[Q]][%{{.+}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.store %{{.+}}, %[[ACC]]
// CHECK-LABEL: gpu.func @streamed_indexer_topk(
// The top-k reads scores as before.
// CHECK-NOT: nontemporal
// The cache kernel's k rows, read once: nontemporal.
// CHECK-LABEL: gpu.func @streamed_cache_w0(
// CHECK-SAME: %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: i32, %{{[^:]+}}: memref<?xbf16>, %{{[^:]+}}: memref<?xbf16>, %[[K:[^:]+]]: memref<?xbf16>,
// CHECK-COUNT-16: vector.load %[[K]][%{{.+}}] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>

// OFF-NOT: nontemporal

// One 16-byte load per slice.
// NVVM-LABEL: llvm.func @streamed_indexer_w0(
// NVVM: llvm.inline_asm has_side_effects asm_dialect = att "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l" %{{.+}} : (!llvm.ptr<1>) -> !llvm.struct<(i32, i32, i32, i32)>
// NVVM-NEXT: llvm.extractvalue
// NVVM: llvm.bitcast %{{.+}} : vector<4xi32> to vector<8xbf16>
// NVVM-LABEL: llvm.func @streamed_indexer_topk(
// NVVM-NOT: no_allocate
// NVVM-LABEL: llvm.func @streamed_cache_w0(
// NVVM-COUNT-16: "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4];"

// NVVM-WIDE-LABEL: llvm.func @streamed_indexer_w0(
// NVVM-WIDE: "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4];"
// NVVM-WIDE: "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4+16];"
// NVVM-WIDE: llvm.bitcast %{{.+}} : vector<8xi32> to vector<16xbf16>

// NVVM-OFF-NOT: no_allocate
// NVVM-OFF-NOT: nontemporal
