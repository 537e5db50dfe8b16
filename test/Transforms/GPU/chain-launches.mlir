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
// before it; `s`, which k0 writes, after it. k2 waits before its scf.if
// (a region may hold anything).
// CHECK-LABEL: module attributes
// CHECK-SAME: cache = {args = [], kernels = [{kernel = "c0"}], writes = []}
// CHECK-SAME: {kernel = "k1", params = [{kind = "buffer", name = "indptr"}, {kind = "buffer", name = "s"}, {kind = "scalar", name = "rows"}], pdl = true, writes = ["out"]}
// CHECK-SAME: {kernel = "k2", params = [{kind = "buffer", name = "indptr"}], pdl = true, writes = []}
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
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: scf.if
// CHECK-LABEL: gpu.func @c0
// CHECK-NEXT: gpu.return
// SM80-NOT: griddepcontrol
// SM80-NOT: pdl
module attributes {vortex.manifest = {version = 2, steps = {
    indexer = {args = [], writes = [],
               kernels = [{kernel = "k0", grid = {kind = "rows"},
                           params = [{name = "indptr", kind = "buffer"},
                                     {name = "s", kind = "buffer"}],
                           writes = ["s"]},
                          {kernel = "k1",
                           params = [{name = "indptr", kind = "buffer"},
                                     {name = "s", kind = "buffer"},
                                     {name = "rows", kind = "scalar"}],
                           writes = ["out"]},
                          {kernel = "k2",
                           params = [{name = "indptr", kind = "buffer"}],
                           writes = []}]},
    cache = {args = [], writes = [], kernels = [{kernel = "c0"}]}}}} {
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
module attributes {vortex.manifest = {steps = {
    indexer = {kernels = [{kernel = "u0"},
                          {kernel = "u1",
                           params = [{name = "indptr", kind = "buffer"}],
                           writes = []}]},
    cache = {kernels = [{kernel = "u3", writes = []},
                        {kernel = "u2",
                         params = [{name = "indptr", kind = "buffer"}],
                         writes = []}]}}}} {
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
// CHECK-SAME: kernels = [{kernel = "m0"}, {kernel = "missing"}, {kernel = "helper"}, {kernel = "m1", params = [{kind = "buffer", name = "indptr"}], pdl = true, writes = []}]
// CHECK-LABEL: gpu.func @m0
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-LABEL: gpu.func @helper
// CHECK-NEXT: gpu.return
// CHECK-LABEL: gpu.func @m1
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load
module attributes {vortex.manifest = {steps = {
    indexer = {kernels = [{kernel = "m0"}, {kernel = "missing"},
                          {kernel = "helper"},
                          {kernel = "m1",
                           params = [{name = "indptr", kind = "buffer"}],
                           writes = []}]}}}} {
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

// Without a manifest, or without its steps, there is no launch order:
// nothing changes.
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
module attributes {vortex.manifest = {flow = "f"}} {
  gpu.module @no_steps {
    gpu.func @a() kernel {
      gpu.return
    }
    gpu.func @b() kernel {
      gpu.return
    }
  }
}
