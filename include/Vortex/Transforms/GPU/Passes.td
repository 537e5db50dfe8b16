//===- Passes.td - Vortex GPU gap-closing passes -----------*- tablegen -*-===//
//
// Passes that close the gaps of MLIR 22.1.8's NVVM lowering for the kernels
// convert-vortex-to-gpu emits (see docs/gpu.md and the toolchain notes).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_TRANSFORMS_GPU_PASSES_TD
#define VORTEX_TRANSFORMS_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def VortexGPULowerSubgroupReduce : Pass<"vortex-gpu-lower-subgroup-reduce"> {
  let summary = "Expand gpu.subgroup_reduce into gpu.shuffle butterflies";
  let description = [{
    `convert-gpu-to-nvvm` of MLIR 22 cannot legalize `gpu.subgroup_reduce`
    (except i32 with `has-redux`) and does not lower `gpu.subgroup_id`,
    `gpu.num_subgroups` and `gpu.subgroup_size`. This pass rewrites, inside
    the op it runs on (usually a `gpu.module`):

    * every `gpu.subgroup_reduce`, clustered or not, of any integer or float
      type or 1-D vector of them, into `gpu.shuffle xor` butterflies
      (log2(cluster size) shuffles, with `cluster(size = N, stride = S)`
      honoured). Values of up to 32 bits are packed into one i32 shuffle,
      vectors are split into 32-bit pieces (or per element when the elements
      are 32 bits or wider); 64-bit scalars use 64-bit shuffles, which
      `convert-gpu-to-nvvm` splits in two;
    * `gpu.subgroup_size` into the constant `subgroup-size`;
    * `gpu.num_subgroups` into `ceil(block threads / subgroup-size)`;
    * `gpu.subgroup_id` into `linear thread id / subgroup-size`.

    A reduction whose cluster size or stride does not fit the subgroup is
    rejected with an error.

    ```mlir
    %r = gpu.subgroup_reduce add %x cluster(size = 16) : (f32) -> f32
    // becomes 4 x gpu.shuffle xor (offsets 1, 2, 4, 8, width 32) + arith.addf
    ```
  }];
  let options = [
    Option<"subgroupSize", "subgroup-size", "unsigned", /*default=*/"32",
           "Lanes of a subgroup (a warp: 32 on NVIDIA GPUs)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::index::IndexDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def VortexGPULowerVectorTransfers : Pass<"vortex-gpu-lower-vector-transfers"> {
  let summary = "Lower vector transfers and masks inside kernels";
  let description = [{
    `convert-gpu-to-nvvm` of MLIR 22 leaves `vector.transfer_read`,
    `vector.transfer_write` and `vector.mask` alone, and the upstream
    `lower-vector-mask` pass cannot nest under a `gpu.module`. This pass
    applies, on any op (usually a `gpu.module`), the patterns that turn
    them into what the NVVM lowering handles:

    * out-of-bounds transfers get an explicit mask (`in_bounds = [false]`
      becomes a `vector.create_mask` of the remaining extent);
    * `vector.mask { vector.transfer_read/write }` becomes a masked transfer;
    * n-D masks are unrolled to 1-D ones, transfer permutation maps are
      simplified and n-D transfers are unrolled to 1-D transfers (scf loops);
    * 1-D transfers become `vector.load`/`vector.store`, or
      `vector.maskedload`/`vector.maskedstore` when masked, plus
      `vector.broadcast` for broadcast dimensions.

    A transfer on a tensor is rejected up front (kernels work on buffers),
    and so is any `vector.transfer_read`/`vector.transfer_write` still there
    afterwards: the NVVM translation would fail on it later with a less
    helpful message.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def VortexGPULowerFp8 : Pass<"vortex-gpu-lower-fp8"> {
  let summary = "Widen fp8 to f32 in a way LLVM 22's NVVM path can serialize";
  let description = [{
    LLVM 22's NVPTX back end cannot select `fpext` from fp8, so
    `arith.extf` of an `f8E4M3FN` or `f8E5M2` scalar (how kernels widen
    fp8 k and v) fails at serialization. This pass rewrites each one:

    * `f8E5M2` is the high byte of an f16: a shift into an i16, a bitcast to
      f16 and `arith.extf` from f16 (exact, any chip);
    * `f8E4M3FN` on `chip` sm_89 or later: the hardware conversion
      `nvvm.convert.f8x2.to.f16x2` (PTX `cvt.rn.f16x2.e4m3x2`, exact) of the
      byte, then `arith.extf` from f16;
    * `f8E4M3FN` on earlier chips: from the bits, exactly: the exponent
      rebiased into f32's, subnormals as m * 2^-9, S.1111.111 as NaN.

    Narrowing to fp8 (`arith.truncf`) has no lowering and is rejected, as is
    a `chip` that is not `sm_<number>` (with an optional suffix, `sm_90a`).
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "The target chip (sm_89 and later have the fp8 conversion)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def VortexGPULowerNontemporalLoads
    : Pass<"vortex-gpu-lower-nontemporal-loads"> {
  let summary = "Nontemporal global loads of NVVM kernels as loads that "
                "skip L1";
  let description = [{
    LLVM 22's NVPTX back end drops `!nontemporal` on loads, so a load that
    reads data once still allocates in L1. For random 256-byte gathers on
    an H100, loads that skip L1 are 2% faster at the same occupancy
    (`bench/gather_ceiling.cu`; docs/gpu.md, "Streaming loads"). This pass,
    on any op (usually the `llvm.func`s of a `gpu.module` after
    `convert-gpu-to-nvvm`), rewrites each `llvm.load {nontemporal}` that

    * is in a kernel (an `llvm.func` with `gpu.kernel` or `nvvm.kernel`),
    * reads global memory: its address is a `!llvm.ptr<1>`, or a pointer
      computed by `llvm.getelementptr` from a pointer argument of the
      kernel (CUDA passes kernel pointers to global memory), also through
      `llvm.extractvalue` of the `llvm.insertvalue` that put it there,
    * reads 4, 8 or 16 bytes at least aligned to its size, or 32 to 64
      bytes (a multiple of 16) at least 16-byte aligned, and is neither
      volatile nor atomic,

    into inline PTX `ld.global.L1::no_allocate.b32` (`.v2.b32`, `.v4.b32`;
    wider loads as `.v4.b32` pieces at `[p+16]`, ...) and a bitcast to the
    loaded type. The rewrite is a pattern
    (`populateVortexGPULowerNontemporalLoadsPatterns`) for other pipelines. The inline PTX has side effects, so
    LLVM keeps it in order with barriers, `griddepcontrol.wait` and stores.

    Anything else keeps its load: the hint is never needed for
    correctness. So does every load of a `gpu.module` whose `#nvvm.target`
    is older than sm_70 or names no PTX ISA of 7.4 or later (`+ptx74`),
    where `L1::no_allocate` does not exist, and of one with no NVVM target.

    ```mlir
    %v = llvm.load %p {alignment = 16 : i64, nontemporal} : !llvm.ptr -> vector<8xbf16>
    // becomes (%p from a kernel argument)
    %g = llvm.addrspacecast %p : !llvm.ptr to !llvm.ptr<1>
    %s = llvm.inline_asm has_side_effects "ld.global.L1::no_allocate.v4.b32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l" %g : (!llvm.ptr<1>) -> !llvm.struct<(i32, i32, i32, i32)>
    // four llvm.extractvalue, a vector<4xi32>, llvm.bitcast to vector<8xbf16>
    ```
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect",
  ];
}

def VortexGPUSerializeKernels
    : Pass<"vortex-gpu-serialize-kernels", "::mlir::ModuleOp"> {
  let summary = "gpu-module-to-binary with each kernel serialized on its own "
                "thread";
  let description = [{
    Does what `gpu-module-to-binary` does (every `gpu.module` becomes a
    `gpu.binary` holding one object per target), but for PTX (`format` isa)
    it serializes each kernel of a module on its own: a copy of the module
    that keeps that kernel and the symbols it uses, translated to LLVM IR,
    optimized and compiled to PTX on the context's thread pool, largest
    first. The pieces' PTX is then joined into one PTX module, in the
    kernels' order. LLVM optimizes and compiles each function separately,
    so every kernel's PTX is the same as from the whole module; a flow's
    kernels compile in parallel.

    The module is serialized whole, as `gpu-module-to-binary` would, when
    the pieces could not be joined: formats other than isa (a cubin is
    assembled whole), modules of one kernel, and PTX that holds anything at
    module scope besides its kernel (a `.func`, a `.global`), which two
    pieces could both define.

    With `cache-dir`, each kernel's PTX is kept in that directory under a
    SHA-256 of its piece (as bytecode, without locations unless they carry
    debug information), the LLVM version, the format and the libdevice it
    links, and read back instead of compiled when the same piece comes
    again (docs/gpu.md, "Kernel cache"); modules of one kernel then take
    the per-kernel path too. An entry that does not declare the kernel is
    compiled again and replaced. A directory that cannot be created is an
    error; an entry that cannot be written, a warning. With `prebuilt-dir`
    too, a kernel the cache lacks is looked up in that directory (read, never
    written; docs/gpu.md, "Prebuilt kernels") and a hit is copied into the
    cache. With `prebuilt-dir` alone, kernels are looked up there and
    nothing is written anywhere. A `prebuilt-dir` that is not a directory
    is an error.

    An unknown `format` is rejected, as is a `gpu.module` without targets.

    ```mlir
    gpu.module @k [#nvvm.target<chip = "sm_90">] { llvm.func @a() ... llvm.func @b() ... }
    // becomes
    gpu.binary @k [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "... .entry a ... .entry b ...">]
    ```
  }];
  let options = [
    Option<"toolkitPath", "toolkit", "std::string", /*default=*/"\"\"",
           "The CUDA toolkit (libdevice); empty: none">,
    Option<"format", "format", "std::string", /*default=*/"\"isa\"",
           "isa (PTX), bin, fatbin or llvm, as in gpu-module-to-binary">,
    Option<"cacheDir", "cache-dir", "std::string", /*default=*/"\"\"",
           "Keep each kernel's PTX in this directory and reuse it; empty: "
           "no cache">,
    Option<"prebuiltDir", "prebuilt-dir", "std::string", /*default=*/"\"\"",
           "Also read entries from this directory of prebuilt kernels, "
           "never written (with cache-dir, a hit is copied there)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def VortexGPUChainLaunches
    : Pass<"vortex-gpu-chain-launches", "::mlir::ModuleOp"> {
  let summary = "Let each kernel of a flow step launch while the kernel "
                "before it finishes (programmatic dependent launch, sm_90+)";
  let description = [{
    A flow step is a chain of kernels on one stream: the top-k reads what
    the score kernel wrote. Launched the ordinary way, a kernel's launch
    starts only when the kernel before it has finished and flushed its
    writes; at a batch of one that gap is a large part of the step. With
    programmatic dependent launch (PTX `griddepcontrol`, sm_90 and later)
    the next kernel's CTAs are scheduled while the previous kernel still
    runs, and wait in hardware for its completion and its writes.

    On a module that carries a flow's `vortex.manifest`, for each step's
    launches k0, ..., kn-1 (each named by a `gpu.func` of a `gpu.module`):

    * ki with i < n - 1 starts with `nvvm.griddepcontrol launch_dependents`:
      once all of its CTAs have started, the next kernel's launch may begin;
    * ki with i > 0 gets `nvvm.griddepcontrol wait` before the first op of
      its entry block that may touch memory an earlier launch of the step
      writes, or write memory it reads, and its manifest entry gets
      `pdl = true`: the runtime may launch it with programmatic stream
      serialization (docs/manifest.md). Ahead of the wait stay ops without
      memory effects, barriers, loads and stores of the kernel's workgroup
      and private attributions, `memref.load`s of buffer arguments whose
      tensors (the launch's `params`) no earlier launch lists in its
      `writes`, and `memref.store`s and `memref.atomic_rmw`s of buffers no
      earlier launch lists in its `reads` or `writes`; region ops
      (loops, ifs) go ahead when everything in them does. A launch without
      a `reads` (`writes`) list, or with an entry that is no string, may
      read (write) anything. An `scf.if` that holds something else is
      entered: each branch gets its own wait where it needs one (a branch
      that touches nothing of the kind waits for nothing), and the ops after
      the if are judged the same way. Unless the entry block itself got
      a wait, one more comes before the return, so that every thread waits
      before it exits: the kernel never completes before the launch it
      depends on, and what follows it may rely on every earlier launch
      having completed. A kernel's prologue (its row's bounds, its offset,
      its writes of outputs no earlier launch touches) thus overlaps the
      launch before it. Without the launch attribute the wait returns at
      once, so the kernel is correct launched either way.

    Adjacent launches that share a `choice` are alternatives (the runtime
    launches exactly one of them): each is placed as if the others were
    not there, chained to the launches before the group, and the launches
    after the group wait for all of them.

    The first launch of a step waits on nothing it does not know: it is
    launched the ordinary way, after whatever the stream ran before, and the
    launches after it start no earlier than it does. A kernel that already
    holds these ops is left as it is, so the pass may run twice.

    For a `chip` before sm_90, and on a module without a manifest or
    without manifest steps, the pass changes nothing. A launch whose kernel
    is not a `gpu.func` kernel of the module is left as it is (the
    manifest's reader, e.g. `vortex-compile`, names every missing kernel),
    and the kernels after it wait before any load. A chip that is not
    `sm_<number>[suffix]` and malformed steps (a step that is not a
    dictionary, one without a kernels array, a launch without a kernel
    name) are rejected.

    ```mlir
    gpu.func @flow_indexer_topk(%indptr: memref<?xi32>, ..., %scores: memref<?xf32>) kernel {
      %row = gpu.block_id x
      %start = memref.load %indptr[%row]   // no earlier launch writes indptr
      nvvm.griddepcontrol wait
      %key = memref.load %scores[...]      // the score kernel wrote it
      ...
    }
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "The target chip (sm_90 and later have griddepcontrol)">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::NVVM::NVVMDialect",
  ];
}

#endif // VORTEX_TRANSFORMS_GPU_PASSES_TD
