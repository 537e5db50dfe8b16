// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-nontemporal-loads | FileCheck %s
//
// Nontemporal loads of global memory in kernels become inline
// ld.global.L1::no_allocate (docs/gpu.md, "Streaming loads"); every other
// load is left as it is.

module attributes {gpu.container_module} {
gpu.module @kernels [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  // CHECK-LABEL: llvm.func @rewritten(
  // CHECK-SAME: %[[P:[^:]+]]: !llvm.ptr, %[[G:[^:]+]]: !llvm.ptr<1>, %[[I:[^:]+]]: i64
  llvm.func @rewritten(%p: !llvm.ptr, %g: !llvm.ptr<1>, %i: i64)
      attributes {gpu.kernel, nvvm.kernel} {
    // 16 bytes at a generic pointer computed from an argument: one v4 load
    // of the global address, bitcast back.
    // CHECK: %[[A:.+]] = llvm.getelementptr %[[P]][%[[I]]]
    // CHECK: %[[GA:.+]] = llvm.addrspacecast %[[A]] : !llvm.ptr to !llvm.ptr<1>
    // CHECK: %[[S:.+]] = llvm.inline_asm has_side_effects asm_dialect = att "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l" %[[GA]] : (!llvm.ptr<1>) -> !llvm.struct<(i32, i32, i32, i32)>
    // CHECK-COUNT-4: llvm.extractvalue %[[S]]
    // CHECK: llvm.mlir.poison : vector<4xi32>
    // CHECK-COUNT-4: llvm.insertelement
    // CHECK: %[[V:.+]] = llvm.bitcast %{{.+}} : vector<4xi32> to vector<8xbf16>
    // CHECK: llvm.store %[[V]], %[[P]]
    %a = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
    %v = llvm.load %a {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<8xbf16>
    llvm.store %v, %p : vector<8xbf16>, !llvm.ptr
    // 4 bytes: one b32 load, no struct.
    // CHECK: %[[W:.+]] = llvm.inline_asm has_side_effects asm_dialect = att "ld.global.L1::no_allocate.b32 $0, [$1];", "=r,l" %{{.+}} : (!llvm.ptr<1>) -> i32
    // CHECK: llvm.bitcast %[[W]] : i32 to f32
    %f = llvm.load %p {alignment = 4 : i64, nontemporal} : !llvm.ptr -> f32
    llvm.store %f, %p : f32, !llvm.ptr
    // 8 bytes from a global pointer: no address space cast.
    // CHECK-NOT: llvm.addrspacecast %[[G]]
    // CHECK: llvm.inline_asm has_side_effects asm_dialect = att "ld.global.L1::no_allocate.v2.b32 {$0, $1}, [$2];", "=r,=r,l" %[[G]] : (!llvm.ptr<1>) -> !llvm.struct<(i32, i32)>
    // CHECK: llvm.bitcast %{{.+}} : vector<2xi32> to vector<2xf32>
    %d = llvm.load %g {alignment = 8 : i64, nontemporal} : !llvm.ptr<1> -> vector<2xf32>
    llvm.store %d, %g : vector<2xf32>, !llvm.ptr<1>
    // 32 bytes: two v4 loads 16 bytes apart (sm_90 has no wider load).
    // CHECK: "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4];"
    // CHECK: "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4+16];"
    // CHECK: llvm.bitcast %{{.+}} : vector<8xi32> to vector<16xbf16>
    %w = llvm.load %a {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<16xbf16>
    llvm.store %w, %p : vector<16xbf16>, !llvm.ptr
    // A memref descriptor's aligned pointer, through its insertvalue.
    // CHECK: %[[D:.+]] = llvm.extractvalue %{{.+}}[1] : !llvm.struct<(ptr, ptr, i64)>
    // CHECK: llvm.addrspacecast %[[D]] : !llvm.ptr to !llvm.ptr<1>
    // CHECK: "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4];"
    %u = llvm.mlir.undef : !llvm.struct<(ptr, ptr, i64)>
    %u1 = llvm.insertvalue %p, %u[0] : !llvm.struct<(ptr, ptr, i64)>
    %u2 = llvm.insertvalue %p, %u1[1] : !llvm.struct<(ptr, ptr, i64)>
    %u3 = llvm.insertvalue %i, %u2[2] : !llvm.struct<(ptr, ptr, i64)>
    %ap = llvm.extractvalue %u3[1] : !llvm.struct<(ptr, ptr, i64)>
    %x = llvm.load %ap {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    llvm.store %x, %p : vector<4xf32>, !llvm.ptr
    // CHECK-NOT: nontemporal
    // CHECK: llvm.return
    llvm.return
  }

  // CHECK-LABEL: llvm.func @kept(
  llvm.func @kept(%p: !llvm.ptr, %s: !llvm.ptr<3>, %i: i64)
      attributes {nvvm.kernel} {
    // Not nontemporal, volatile, under-aligned, 2 bytes, 80 bytes, shared
    // memory, and an address not known to be global (a select).
    // CHECK-NOT: llvm.inline_asm
    // CHECK: llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
    // CHECK: llvm.load volatile %{{.+}} {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    // CHECK: llvm.load %{{.+}} {alignment = 4 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    // CHECK: llvm.load %{{.+}} {alignment = 2 : i64, nontemporal} : !llvm.ptr -> bf16
    // CHECK: llvm.load %{{.+}} {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<20xf32>
    // CHECK: llvm.load %{{.+}} {alignment = 16 : i64, nontemporal} : !llvm.ptr<3> -> vector<4xf32>
    // CHECK: llvm.load %{{.+}} {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    %a = llvm.load %p {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
    %b = llvm.load volatile %p {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    %c = llvm.load %p {alignment = 4 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    %d = llvm.load %p {alignment = 2 : i64, nontemporal} : !llvm.ptr -> bf16
    %e = llvm.load %p {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<20xf32>
    %f = llvm.load %s {alignment = 16 : i64, nontemporal} : !llvm.ptr<3> -> vector<4xf32>
    %t = llvm.icmp "eq" %i, %i : i64
    %q = llvm.select %t, %p, %p : i1, !llvm.ptr
    %g = llvm.load %q {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    llvm.return
  }

  // A device function's pointer argument may address any memory.
  // CHECK-LABEL: llvm.func @device(
  // CHECK-NOT: llvm.inline_asm
  // CHECK: llvm.load %{{.+}} {alignment = 16 : i64, nontemporal}
  llvm.func @device(%p: !llvm.ptr) -> vector<4xf32> {
    %a = llvm.load %p {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    llvm.return %a : vector<4xf32>
  }
}
}

// -----

// A target whose PTX ISA (7.0) has no L1::no_allocate, and a module
// without an NVVM target: unchanged.
module attributes {gpu.container_module} {
gpu.module @old [#nvvm.target<chip = "sm_80", features = "+ptx70">] {
  // CHECK-LABEL: llvm.func @old_ptx(
  // CHECK-NOT: llvm.inline_asm
  // CHECK: llvm.load %{{.+}} {alignment = 16 : i64, nontemporal}
  llvm.func @old_ptx(%p: !llvm.ptr) attributes {nvvm.kernel} {
    %a = llvm.load %p {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    llvm.store %a, %p : vector<4xf32>, !llvm.ptr
    llvm.return
  }
}
gpu.module @untargeted {
  // CHECK-LABEL: llvm.func @no_target(
  // CHECK-NOT: llvm.inline_asm
  // CHECK: llvm.load %{{.+}} {alignment = 16 : i64, nontemporal}
  llvm.func @no_target(%p: !llvm.ptr) attributes {nvvm.kernel} {
    %a = llvm.load %p {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<4xf32>
    llvm.store %a, %p : vector<4xf32>, !llvm.ptr
    llvm.return
  }
}
}
