//===- Pipelines.h - Vortex pass pipelines ----------------------*- C++ -*-===//
//
// Named pipelines from vortex flows down to executable code. Each pipeline is
// a sequence of stages that are also registered on their own, so every stage
// can be run and dumped in isolation (or use --mlir-print-ir-after-all).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_PIPELINES_PIPELINES_H
#define VORTEX_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::vortex {

/// Stage 1: vortex-fuse, vortex-pad, vortex-mask-padding, then vortex flows
/// -> linalg on tensors (+ elementwise fusion).
void buildVortexToLinalgStage(OpPassManager &pm);
/// Stage 2: tensors -> buffers, with deallocation.
void buildVortexBufferizeStage(OpPassManager &pm);
/// Stage 3: loops and memrefs -> the LLVM dialect.
void buildVortexLowerToLLVMStage(OpPassManager &pm);

/// vortex-to-cpu: stages 1-3; the result translates to LLVM IR with
/// `mlir-translate --mlir-to-llvmir` and each step function has a C
/// interface (`_mlir_ciface_<flow>_indexer`, `_mlir_ciface_<flow>_cache`).
void buildVortexToCPUPipeline(OpPassManager &pm);

/// Registers `vortex-to-cpu` and its stages `vortex-cpu-stage-linalg`,
/// `vortex-cpu-stage-bufferize` and `vortex-cpu-stage-llvm`.
void registerVortexPipelines();

//===----------------------------------------------------------------------===//
// vortex-to-nvvm (lib/Pipelines/NVVMPipeline.cpp, docs/gpu.md)
//===----------------------------------------------------------------------===//

struct VortexNVVMPipelineOptions
    : public PassPipelineOptions<VortexNVVMPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("GPU architecture (sm_80, sm_90, "
                                          "sm_100, ...)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("NVPTX features, e.g. +ptx80; empty: the PTX ISA the "
                     "chip needs, at least 8.0"),
      llvm::cl::init("")};
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("LLVM optimization level (0-3)"),
                            llvm::cl::init(3)};
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit for libdevice (and ptxas for format=bin); "
                     "empty: $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH, else "
                     "/usr/local/cuda if it has libdevice"),
      llvm::cl::init("")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What gpu.binary holds: isa (PTX), bin (cubin), "
                     "fatbin or llvm"),
      llvm::cl::init("isa")};
  Option<bool> chainLaunches{
      *this, "chain-launches",
      llvm::cl::desc("Let each kernel of a flow step launch while the one "
                     "before it finishes (vortex-gpu-chain-launches; sm_90+)"),
      llvm::cl::init(true)};
  Option<std::string> toGPU{
      *this, "to-gpu",
      llvm::cl::desc("convert-vortex-to-gpu's options, as that pass takes "
                     "them ('key=value ...'; docs/Passes/"
                     "VortexConversionPasses.md); on chips below sm_80 "
                     "envelope-mma and attend-mma default to false"),
      llvm::cl::init("")};
  Option<std::string> kernelCache{
      *this, "kernel-cache",
      llvm::cl::desc("Keep each kernel's PTX in this directory and reuse it "
                     "when the kernel comes again (vortex-gpu-serialize-"
                     "kernels cache-dir; empty: no cache)"),
      llvm::cl::init("")};
  Option<std::string> prebuiltKernels{
      *this, "prebuilt-kernels",
      llvm::cl::desc("Also read kernels from this directory of prebuilt "
                     "ones, never written (vortex-gpu-serialize-kernels "
                     "prebuilt-dir; empty: none)"),
      llvm::cl::init("")};
};

/// Checks the options before a pipeline is built from them: a chip that both
/// LLVM 22's NVPTX backend and CUDA 13's ptxas know, a PTX ISA in `features`
/// the chip accepts (a too-old one aborts inside LLVM), opt-level, format,
/// and that the CUDA toolkit, if one is found, has libdevice.
LogicalResult verifyVortexNVVMPipelineOptions(
    const VortexNVVMPipelineOptions &options, std::string &error);

/// `options.features`, or when empty `+ptxNN` for the lowest PTX ISA the chip
/// accepts, and at least 8.0.
std::string getVortexNVVMFeatures(const VortexNVVMPipelineOptions &options);

/// The CUDA toolkit to use: `requested` if not empty, else $CUDA_HOME,
/// $CUDA_ROOT, $CUDA_PATH, else /usr/local/cuda if it has libdevice, else "".
std::string findCUDAToolkit(llvm::StringRef requested = "");

/// vortex-nvvm-stage-lower: on a module with vortex flows, vortex-fuse,
/// vortex-pad, vortex-mask-padding and convert-vortex-to-gpu (only if that
/// pass is registered); then the subgroup and vector-transfer gap-closing
/// passes and the kernel-only NVVM lowering of every gpu.module, with the
/// #nvvm.target attached.
void buildVortexNVVMLowerStage(OpPassManager &pm,
                               const VortexNVVMPipelineOptions &options);
/// vortex-nvvm-stage-binary: gpu-module-to-binary with the CUDA toolkit (so
/// libdevice is linked and inlined).
void buildVortexNVVMBinaryStage(OpPassManager &pm,
                                const VortexNVVMPipelineOptions &options);
/// vortex-to-nvvm: both stages; every gpu.module becomes a gpu.binary holding
/// one object in `format` (PTX by default: vortex-compile runs ptxas on it).
void buildVortexToNVVMPipeline(OpPassManager &pm,
                               const VortexNVVMPipelineOptions &options);

/// Registers `vortex-to-nvvm` and its stages (called by
/// registerVortexPipelines).
void registerVortexNVVMPipelines();

} // namespace mlir::vortex

#endif // VORTEX_PIPELINES_PIPELINES_H
