//===- plan.h - Launch plans in launchable form -----------------*- C++ -*-===//
//
// The plan's description is python/vortex/runtime/plan.py; this reads its
// objects by field name into a form that holds no Python object, and
// launches it.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_NATIVE_PLAN_H
#define VORTEX_NATIVE_PLAN_H

#include <torch/extension.h>

#include <ATen/core/ivalue.h>
#include <cuda.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace vortex_native {

/// Scratch buffers share one allocation, each starting at this alignment.
constexpr size_t kScratchAlign = 256;

struct Launch {
  CUfunction func;
  unsigned grid[3];
  unsigned block[3];
  unsigned sharedBytes;
  uint32_t firstSlot; // first of this launch's words in Plan::slots
  uint32_t index;     // position in the plan's list, for messages
  bool pdl;           // programmatic stream serialization
};

/// Parameter words to overwrite with a scratch buffer's address per call.
struct ScratchPatch {
  uint32_t slot;
  uint32_t buffer;
};

/// A plan in launchable form. Every kernel parameter takes one 64-bit word
/// (an i32 uses its low half: cuLaunchKernel reads only as many bytes as
/// the parameter has), so a launch's `void *params[]` is just the addresses
/// of consecutive words.
struct Plan {
  c10::DeviceIndex device = 0;
  std::vector<size_t> scratchOffsets; // in one allocation of scratchBytes
  size_t scratchBytes = 0;
  std::vector<uint64_t> slots; // argument pointers baked in
  std::vector<ScratchPatch> patches;
  std::vector<Launch> launches;
};

/// A malformed plan object; reported as RuntimeError.
struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads a vortex.runtime.plan.Plan for tensors `args` on `device`; needs
/// the GIL. A launch with an empty grid is validated, then dropped.
void convertPlan(Plan &plan, pybind11::handle obj,
                 at::ArrayRef<c10::IValue> args, c10::DeviceIndex device);

/// Queues the plan's kernels on `stream`; scratch buffer j is at
/// `scratch[j]`. Errors name `what`.
void launchKernels(const std::string &what, const Plan &plan, CUstream stream,
                   const std::vector<uintptr_t> &scratch);

/// Adds launch_plan: one plan launched once (vortex.runtime.driver).
void bindPlan(pybind11::module &m);

} // namespace vortex_native

#endif // VORTEX_NATIVE_PLAN_H
