// RUN: vortex-opt %s --split-input-file --vortex-gpu-chain-launches | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-gpu-chain-launches=chip=sm_100a | FileCheck %s
// Running it twice changes nothing more.
// RUN: vortex-opt %s --split-input-file --vortex-gpu-chain-launches --vortex-gpu-chain-launches | FileCheck %s
// Before sm_90 there is no griddepcontrol: nothing changes.
// RUN: vortex-opt %s --split-input-file --vortex-gpu-chain-launches=chip=sm_80 | FileCheck %s --check-prefix=SM80

// A step of three launches: the first only triggers, the middle one waits
// and triggers, the last only waits; every launch after the first gets
// pdl = true. The one-launch cache step is left alone.
//
// The wait comes before the first op that may touch what an earlier launch
// wrote: k1 reads its row bounds from `indptr`, which no launch writes,
// before it; `s`, which k0 writes, after it. k2's scf.if stores to
// `indptr`, and the launches before it list no reads (they may read
// anything): the wait goes into the if, before the store. Every thread
// still waits before it returns (k2 completes only after k1 has), so a
// second wait comes before the return.
// CHECK-LABEL: module attributes
// CHECK-SAME: cache = #vortex.step<args = [], writes = [], launches = [#vortex.launch<kernel = "c0", grid = rows, threads = 1, params = []>]>
// CHECK-SAME: #vortex.launch<kernel = "k1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>, #vortex.launch_param<name = "s", kind = buffer>, #vortex.launch_param<name = "rows", kind = scalar>], writes = ["out"], pdl = true>
// CHECK-SAME: #vortex.launch<kernel = "k2", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>], writes = [], pdl = true>
// CHECK-LABEL: gpu.func @k0
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NOT: griddepcontrol
// CHECK-LABEL: gpu.func @k1
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: gpu.block_id x
// CHECK-NEXT: memref.load %arg0
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load %arg1
// CHECK-LABEL: gpu.func @k2
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: memref.load %arg0
// CHECK-NEXT: arith.cmpi
// CHECK-NEXT: scf.if
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: gpu.return
// CHECK-LABEL: gpu.func @c0
// CHECK-NEXT: gpu.return
// SM80-NOT: griddepcontrol
// SM80-NOT: pdl
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {
    indexer = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "k0", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>,
          #vortex.launch_param<name = "s", kind = buffer>], writes = ["s"]>,
        #vortex.launch<kernel = "k1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>,
          #vortex.launch_param<name = "s", kind = buffer>,
          #vortex.launch_param<name = "rows", kind = scalar>], writes = ["out"]>,
        #vortex.launch<kernel = "k2", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>], writes = []>]>,
    cache = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "c0", grid = rows, threads = 1, params = []>]>}>} {
  gpu.module @kernels {
    gpu.func @k0(%indptr: memref<?xi32>, %s: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %x = arith.constant 1.0 : f32
      memref.store %x, %s[%c0] : memref<?xf32>
      gpu.return
    }
    gpu.func @k1(%indptr: memref<?xi32>, %s: memref<?xf32>, %rows: i32) kernel {
      %c0 = arith.constant 0 : index
      %b = gpu.block_id x
      %start = memref.load %indptr[%b] : memref<?xi32>
      %x = memref.load %s[%c0] : memref<?xf32>
      memref.store %x, %s[%c0] : memref<?xf32>
      gpu.return
    }
    gpu.func @k2(%indptr: memref<?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %n = memref.load %indptr[%c0] : memref<?xi32>
      %p = arith.cmpi sgt, %n, %n : i32
      scf.if %p {
        memref.store %n, %indptr[%c0] : memref<?xi32>
      }
      gpu.return
    }
    gpu.func @c0() kernel {
      gpu.return
    }
  }
}

// -----

// With reads and writes listed, the wait goes past everything that touches
// neither what the score launch writes nor what it reads: the loop over
// `indptr` (the row's offset), the workgroup buffer and its barrier, and
// the store to `out`, which s0 neither reads nor writes. The first scf.if
// loads `scores` (s0 writes it) in its then-branch only: the wait goes
// there, and the else-branch, which copies `indptr` to `out`, does not
// wait. After the if, the store to `q` (s0 reads it: overwriting it early
// would race) and the atomic on `status` (s0 writes it) each wait in the
// branch that does them; the loop that loads `scores` waits before it,
// in the entry block, so no wait is added before the return.
// CHECK-LABEL: module attributes
// CHECK-LABEL: gpu.func @t1
// CHECK-NOT: griddepcontrol
// CHECK: scf.for
// CHECK: memref.load %arg0
// CHECK-NOT: griddepcontrol
// CHECK: memref.store %{{.+}}, %arg6[
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: griddepcontrol
// CHECK: memref.store %{{.+}}, %arg3[
// CHECK-NEXT: arith.cmpi
// CHECK-NEXT: scf.if
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load %arg1
// CHECK: } else {
// CHECK-NOT: griddepcontrol
// CHECK: memref.store %{{.+}}, %arg3[
// CHECK-NEXT: }
// CHECK-NEXT: scf.if
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.store %{{.+}}, %arg4[
// CHECK-NEXT: }
// CHECK-NEXT: scf.if
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.atomic_rmw addi %{{.+}}, %arg5[
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: scf.for
// CHECK-NOT: griddepcontrol
// CHECK: gpu.return
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {
    indexer = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "s0", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>,
          #vortex.launch_param<name = "q", kind = buffer>,
          #vortex.launch_param<name = "scores", kind = buffer>,
          #vortex.launch_param<name = "status", kind = buffer>], reads = ["indptr", "q"], writes = ["scores", "status"]>,
        #vortex.launch<kernel = "t1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>,
          #vortex.launch_param<name = "scores", kind = buffer>,
          #vortex.launch_param<name = "rows", kind = scalar>,
          #vortex.launch_param<name = "out", kind = buffer>,
          #vortex.launch_param<name = "q", kind = buffer>,
          #vortex.launch_param<name = "status", kind = buffer>], reads = ["indptr", "scores"], writes = ["out", "q", "status"]>]>}>} {
  gpu.module @kernels {
    gpu.func @s0(%indptr: memref<?xi32>, %q: memref<?xf32>,
                 %scores: memref<?xf32>, %status: memref<?xi32>) kernel {
      gpu.return
    }
    gpu.func @t1(%indptr: memref<?xi32>, %scores: memref<?xf32>, %rows: i32,
                 %out: memref<?xi32>, %q: memref<?xf32>,
                 %status: memref<?xi32>)
        workgroup(%sums: memref<8xi32, #gpu.address_space<workgroup>>)
        kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %zero = arith.constant 0 : i32
      %f = arith.constant 1.0 : f32
      %r = gpu.block_id x
      %sum = scf.for %i = %c0 to %r step %c1 iter_args(%acc = %zero) -> i32 {
        %n = memref.load %indptr[%i] : memref<?xi32>
        %s = arith.addi %acc, %n : i32
        scf.yield %s : i32
      }
      memref.store %sum, %sums[%c0] : memref<8xi32, #gpu.address_space<workgroup>>
      gpu.barrier
      memref.store %sum, %out[%r] : memref<?xi32>
      %p = arith.cmpi sgt, %sum, %zero : i32
      scf.if %p {
        %x = memref.load %scores[%r] : memref<?xf32>
        %y = arith.fptosi %x : f32 to i32
        memref.store %y, %out[%c0] : memref<?xi32>
      } else {
        %n = memref.load %indptr[%c0] : memref<?xi32>
        memref.store %n, %out[%c1] : memref<?xi32>
      }
      scf.if %p {
        memref.store %f, %q[%c0] : memref<?xf32>
      }
      scf.if %p {
        %old = memref.atomic_rmw addi %zero, %status[%c0] : (i32, memref<?xi32>) -> i32
      }
      scf.for %i = %c0 to %c8 step %c1 {
        %x = memref.load %scores[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}

// -----

// A launch that lists no reads may read anything: the kernel after it
// still loads `indptr` before the wait (nothing writes it), but its store
// to `out` waits.
// CHECK-LABEL: module attributes
// CHECK-LABEL: gpu.func @v1
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: memref.load %arg0
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.store
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {
    indexer = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "v0", grid = rows, threads = 1, params = [], writes = []>,
        #vortex.launch<kernel = "v1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>,
          #vortex.launch_param<name = "out", kind = buffer>], reads = ["indptr"], writes = ["out"]>]>}>} {
  gpu.module @kernels {
    gpu.func @v0() kernel {
      gpu.return
    }
    gpu.func @v1(%indptr: memref<?xi32>, %out: memref<?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %n = memref.load %indptr[%c0] : memref<?xi32>
      memref.store %n, %out[%c0] : memref<?xi32>
      gpu.return
    }
  }
}

// -----

// A launch that lists no writes may write anything: the kernels after it
// wait before any load. So does a kernel whose manifest params do not match
// its arguments.
// CHECK-LABEL: module attributes
// CHECK-LABEL: gpu.func @u1
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load
// CHECK-LABEL: gpu.func @u2
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {
    indexer = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "u0", grid = rows, threads = 1, params = []>,
        #vortex.launch<kernel = "u1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>], writes = []>]>,
    cache = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "u3", grid = rows, threads = 1, params = [], writes = []>,
        #vortex.launch<kernel = "u2", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>], writes = []>]>}>} {
  gpu.module @kernels {
    gpu.func @u0() kernel {
      gpu.return
    }
    gpu.func @u1(%indptr: memref<?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %n = memref.load %indptr[%c0] : memref<?xi32>
      gpu.return
    }
    gpu.func @u3() kernel {
      gpu.return
    }
    gpu.func @u2(%indptr: memref<?xi32>, %extra: memref<?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %n = memref.load %indptr[%c0] : memref<?xi32>
      gpu.return
    }
  }
}

// -----

// A launch of a kernel the module lacks, or of a gpu.func that is no
// kernel, is left to the manifest's reader (vortex-compile names them): no
// pdl on it, and the kernel after it waits before any load.
// CHECK-LABEL: module attributes
// CHECK-SAME: launches = [#vortex.launch<kernel = "m0", grid = rows, threads = 1, params = []>, #vortex.launch<kernel = "missing", grid = rows, threads = 1, params = []>, #vortex.launch<kernel = "helper", grid = rows, threads = 1, params = []>, #vortex.launch<kernel = "m1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>], writes = [], pdl = true>]
// CHECK-LABEL: gpu.func @m0
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-LABEL: gpu.func @helper
// CHECK-NEXT: gpu.return
// CHECK-LABEL: gpu.func @m1
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {
    indexer = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "m0", grid = rows, threads = 1, params = []>,
        #vortex.launch<kernel = "missing", grid = rows, threads = 1, params = []>,
        #vortex.launch<kernel = "helper", grid = rows, threads = 1, params = []>,
        #vortex.launch<kernel = "m1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "indptr", kind = buffer>], writes = []>]>}>} {
  gpu.module @kernels {
    gpu.func @m0() kernel {
      gpu.return
    }
    gpu.func @helper() {
      gpu.return
    }
    gpu.func @m1(%indptr: memref<?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %n = memref.load %indptr[%c0] : memref<?xi32>
      gpu.return
    }
  }
}

// -----

// Without a manifest, or with no steps, there is no launch order: nothing
// changes.
// CHECK-LABEL: gpu.module @handwritten
// CHECK-NOT: griddepcontrol
module {
  gpu.module @handwritten {
    gpu.func @a() kernel {
      gpu.return
    }
    gpu.func @b() kernel {
      gpu.return
    }
  }
}

// -----

// CHECK-LABEL: gpu.module @no_steps
// CHECK-NOT: griddepcontrol
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {
}>} {
  gpu.module @no_steps {
    gpu.func @a() kernel {
      gpu.return
    }
    gpu.func @b() kernel {
      gpu.return
    }
  }
}

// -----

// Alternatives (adjacent launches of one choice): a0 and a1 both write
// `out`, which k0 neither reads nor writes; each is chained to k0 alone, so each stores `out` before its wait
// and waits before it reads `s`, and neither triggers a launch of the other
// (no launch follows the group). The first launch being a group (b0, b1),
// neither waits nor gets pdl; k2 after it waits for both.
// CHECK-LABEL: module attributes
// CHECK-SAME: cache = #vortex.step<args = [], writes = [], launches = [#vortex.launch<kernel = "b0", grid = rows, threads = 1, params = [], writes = ["t"], choice = "g">, #vortex.launch<kernel = "b1", grid = rows, threads = 1, params = [], writes = ["t"], choice = "g">, #vortex.launch<kernel = "k2", grid = rows, threads = 1, params = [#vortex.launch_param<name = "t", kind = buffer>], pdl = true>]>
// CHECK-SAME: indexer = #vortex.step<args = [], writes = [], launches = [#vortex.launch<kernel = "k0", grid = rows, threads = 1, params = [], reads = [], writes = ["s"]>, #vortex.launch<kernel = "a0", grid = rows, threads = 1, params = [#vortex.launch_param<name = "out", kind = buffer>, #vortex.launch_param<name = "s", kind = buffer>], writes = ["out"], pdl = true, choice = "a">, #vortex.launch<kernel = "a1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "out", kind = buffer>, #vortex.launch_param<name = "s", kind = buffer>], writes = ["out"], pdl = true, choice = "a">]>
// CHECK-LABEL: gpu.func @k0
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-LABEL: gpu.func @a0
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: memref.store
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load
// CHECK-NOT: griddepcontrol
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @a1
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: memref.store
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load
// CHECK-NOT: griddepcontrol
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @b0
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: gpu.return
// CHECK-LABEL: gpu.func @b1
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: gpu.return
// CHECK-LABEL: gpu.func @k2
// CHECK-NEXT: arith.constant
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {
    indexer = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "k0", grid = rows, threads = 1, params = [], reads = [], writes = ["s"]>,
        #vortex.launch<kernel = "a0", grid = rows, threads = 1, params = [#vortex.launch_param<name = "out", kind = buffer>,
          #vortex.launch_param<name = "s", kind = buffer>], writes = ["out"], choice = "a">,
        #vortex.launch<kernel = "a1", grid = rows, threads = 1, params = [#vortex.launch_param<name = "out", kind = buffer>,
          #vortex.launch_param<name = "s", kind = buffer>], writes = ["out"], choice = "a">]>,
    cache = #vortex.step<args = [], writes = [],
        launches = [#vortex.launch<kernel = "b0", grid = rows, threads = 1, params = [], writes = ["t"], choice = "g">,
        #vortex.launch<kernel = "b1", grid = rows, threads = 1, params = [], writes = ["t"], choice = "g">,
        #vortex.launch<kernel = "k2", grid = rows, threads = 1, params = [#vortex.launch_param<name = "t", kind = buffer>]>]>}>} {
  gpu.module @kernels {
    gpu.func @k0() kernel {
      gpu.return
    }
    gpu.func @a0(%out: memref<?xi32>, %s: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1 : i32
      memref.store %one, %out[%c0] : memref<?xi32>
      %x = memref.load %s[%c0] : memref<?xf32>
      gpu.return
    }
    gpu.func @a1(%out: memref<?xi32>, %s: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1 : i32
      memref.store %one, %out[%c0] : memref<?xi32>
      %x = memref.load %s[%c0] : memref<?xf32>
      gpu.return
    }
    gpu.func @b0() kernel {
      gpu.return
    }
    gpu.func @b1() kernel {
      gpu.return
    }
    gpu.func @k2(%t: memref<?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %t[%c0] : memref<?xi32>
      gpu.return
    }
  }
}
