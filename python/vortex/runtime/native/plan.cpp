//===- plan.cpp - Launch plans in launchable form -------------------------===//
//
// See plan.h. Every field is checked, so a malformed plan is a PlanError
// that names the launch and parameter, never a bad launch.
//
//===----------------------------------------------------------------------===//

#include "plan.h"
#include "driver.h"

#include <optional>
#include <c10/util/SmallVector.h>

#include <cstring>
#include <limits>
#include <sstream>

namespace py = pybind11;

namespace vortex_native {
namespace {

std::string describe(py::handle obj) {
  try {
    std::string text = py::repr(obj);
    return text.size() > 80 ? text.substr(0, 77) + "..." : text;
  } catch (py::error_already_set &) {
    return "<unprintable>";
  }
}

// A field of a plan.py object (`type` names its class, for the message).
py::object field(py::handle obj, const char *name, const std::string &what,
                 const char *type) {
  if (!py::hasattr(obj, name))
    throw PlanError(what + " must be a vortex.runtime.plan." + type +
                    " (it has no field '" + name + "'), got " +
                    describe(obj));
  return obj.attr(name);
}

py::sequence asSequence(py::handle obj, const std::string &what,
                        ssize_t length = -1) {
  if (!PySequence_Check(obj.ptr()) || PyUnicode_Check(obj.ptr()) ||
      PyBytes_Check(obj.ptr()))
    throw PlanError(what + " must be a sequence, got " + describe(obj));
  auto seq = py::reinterpret_borrow<py::sequence>(obj);
  if (length >= 0 && static_cast<ssize_t>(py::len(seq)) != length)
    throw PlanError(what + " must have " + std::to_string(length) +
                    " items, got " + describe(obj));
  return seq;
}

// An int (or anything with __index__) within [lo, hi].
int64_t asInt(py::handle obj, const std::string &what, int64_t lo,
              int64_t hi) {
  PyObject *index = PyNumber_Index(obj.ptr());
  if (!index) {
    PyErr_Clear();
    throw PlanError(what + " must be an int, got " + describe(obj));
  }
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (value == -1 && PyErr_Occurred())
    PyErr_Clear();
  if (overflow || value < lo || value > hi)
    throw PlanError(what + " = " + describe(obj) + " is not in [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return value;
}

// An index into `count` things (named `noun` in the message).
int64_t asIndex(py::handle obj, const std::string &what, size_t count,
                const char *noun) {
  if (count == 0)
    throw PlanError(what + " = " + describe(obj) + ", but there are no " +
                    noun);
  return asInt(obj, what, 0, static_cast<int64_t>(count) - 1);
}

// A CUfunction handle: a nonzero address (unsigned, so any pointer fits).
CUfunction asFunction(py::handle obj, const std::string &what) {
  PyObject *index = PyNumber_Index(obj.ptr());
  unsigned long long value = 0;
  if (index) {
    value = PyLong_AsUnsignedLongLong(index);
    Py_DECREF(index);
  }
  if (!index || PyErr_Occurred()) {
    PyErr_Clear();
    throw PlanError(what + " must be a CUfunction handle (an int), got " +
                    describe(obj));
  }
  if (value == 0)
    throw PlanError(what + " is a null CUfunction");
  return reinterpret_cast<CUfunction>(static_cast<uintptr_t>(value));
}

void pushDescriptor(Plan &plan, uint64_t ptr, int64_t numel) {
  // MLIR's 1-D memref descriptor: allocated, aligned, offset, size, stride.
  plan.slots.insert(plan.slots.end(),
                    {ptr, ptr, 0, static_cast<uint64_t>(numel), 1});
}

// Appends one Param (kind arg, scratch, ptr, i32 or i64; plan.py) of a
// launch to `plan.slots`.
void convertParam(Plan &plan, py::handle item, const std::string &what,
                  at::ArrayRef<c10::IValue> args) {
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  py::object kindObj = field(item, "kind", what, "Param");
  if (!PyUnicode_Check(kindObj.ptr()))
    throw PlanError(what + " kind must be a string, got " + describe(kindObj));
  std::string kind = py::cast<std::string>(kindObj);
  py::object value = field(item, "value", what, "Param");
  py::object numel = field(item, "numel", what, "Param");

  if (kind == "arg") {
    int64_t i = asIndex(value, what + " argument index", args.size(),
                        "tensor arguments");
    const at::Tensor &t = args[i].toTensor();
    if (t.device() != c10::Device(c10::kCUDA, plan.device))
      throw PlanError(what + ": argument " + std::to_string(i) + " is on " +
                      t.device().str() + ", the plan on cuda:" +
                      std::to_string(plan.device));
    pushDescriptor(plan, reinterpret_cast<uintptr_t>(t.data_ptr()),
                   t.numel());
  } else if (kind == "scratch") {
    int64_t j = asIndex(value, what + " scratch index",
                        plan.scratchOffsets.size(), "scratch buffers");
    int64_t count = asInt(numel, what + " numel", 0, kMax64);
    auto slot = static_cast<uint32_t>(plan.slots.size());
    auto buffer = static_cast<uint32_t>(j);
    plan.patches.push_back({slot, buffer});
    plan.patches.push_back({slot + 1, buffer});
    pushDescriptor(plan, 0, count);
  } else if (kind == "ptr") {
    // A buffer the runtime owns for the flow's lifetime (the guards' status
    // words): its address is part of the plan.
    int64_t address = asInt(value, what + " address", 1, kMax64);
    int64_t count = asInt(numel, what + " numel", 1, kMax64);
    pushDescriptor(plan, static_cast<uint64_t>(address), count);
  } else if (kind == "i32") {
    auto v = static_cast<int32_t>(
        asInt(value, what + " value", std::numeric_limits<int32_t>::min(),
              std::numeric_limits<int32_t>::max()));
    uint64_t word = 0;
    std::memcpy(&word, &v, sizeof(v)); // the low (first) 4 bytes
    plan.slots.push_back(word);
  } else if (kind == "i64") {
    int64_t v = asInt(value, what + " value", kMin64, kMax64);
    plan.slots.push_back(static_cast<uint64_t>(v));
  } else {
    throw PlanError(what + " has unknown kind '" + kind +
                    "' (expected arg, scratch, ptr, i32 or i64)");
  }
}

// Appends launch `index` to `plan`; a launch with an empty grid is dropped.
void convertLaunch(Plan &plan, py::handle item, uint32_t index,
                   at::ArrayRef<c10::IValue> args) {
  constexpr int64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
  std::string what = "launch " + std::to_string(index);
  Launch l{};
  l.func = asFunction(field(item, "func", what, "Launch"), what + " func");
  py::sequence grid =
      asSequence(field(item, "grid", what, "Launch"), what + " grid", 3);
  py::sequence block =
      asSequence(field(item, "block", what, "Launch"), what + " block", 3);
  bool empty = false;
  for (int d = 0; d < 3; ++d) {
    std::string axis = "[" + std::to_string(d) + "]";
    l.grid[d] = static_cast<unsigned>(
        asInt(grid[d], what + " grid" + axis, 0, kMaxU32));
    l.block[d] = static_cast<unsigned>(
        asInt(block[d], what + " block" + axis, 1, kMaxU32));
    empty |= l.grid[d] == 0;
  }
  l.sharedBytes = static_cast<unsigned>(asInt(
      field(item, "shared_bytes", what, "Launch"), what + " shared_bytes", 0,
      kMaxU32));
  l.firstSlot = static_cast<uint32_t>(plan.slots.size());
  l.index = index;
  py::object pdl = field(item, "pdl", what, "Launch");
  if (!PyBool_Check(pdl.ptr()))
    throw PlanError(what + " pdl must be a bool, got " + describe(pdl));
  l.pdl = pdl.ptr() == Py_True;

  size_t firstPatch = plan.patches.size();
  py::sequence params =
      asSequence(field(item, "params", what, "Launch"), what + " params");
  size_t numParams = py::len(params);
  for (size_t p = 0; p < numParams; ++p)
    convertParam(plan, params[p], what + " param " + std::to_string(p), args);
  if (empty) { // validated like the others, but never launched
    plan.slots.resize(l.firstSlot);
    plan.patches.resize(firstPatch);
    return;
  }
  plan.launches.push_back(l);
}

} // namespace

void convertPlan(Plan &plan, py::handle obj, at::ArrayRef<c10::IValue> args,
                 c10::DeviceIndex device) {
  plan.device = device;
  py::sequence scratch = asSequence(field(obj, "scratch_bytes", "the plan",
                                          "Plan"),
                                    "the plan's scratch sizes");
  size_t numScratch = py::len(scratch);
  for (size_t j = 0; j < numScratch; ++j) {
    int64_t nbytes = asInt(scratch[j], "scratch " + std::to_string(j) +
                                           " size",
                           0, int64_t(1) << 48);
    plan.scratchOffsets.push_back(plan.scratchBytes);
    plan.scratchBytes += (static_cast<size_t>(nbytes) + kScratchAlign - 1) /
                         kScratchAlign * kScratchAlign;
  }
  py::sequence launches =
      asSequence(field(obj, "launches", "the plan", "Plan"),
                 "the plan's launches");
  size_t numLaunches = py::len(launches);
  for (size_t i = 0; i < numLaunches; ++i)
    convertLaunch(plan, launches[i], static_cast<uint32_t>(i), args);
}

void launchKernels(const std::string &what, const Plan &plan, CUstream stream,
                   const std::vector<uintptr_t> &scratch) {
  c10::SmallVector<uint64_t, 256> slots(plan.slots.begin(), plan.slots.end());
  for (const ScratchPatch &p : plan.patches)
    slots[p.slot] = scratch[p.buffer];
  c10::SmallVector<void *, 256> params(slots.size());
  for (size_t i = 0; i < slots.size(); ++i)
    params[i] = &slots[i];

  const Driver &drv = driver();
  CUlaunchAttribute chained{};
  chained.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  chained.value.programmaticStreamSerializationAllowed = 1;
  for (const Launch &l : plan.launches) {
    CUresult res;
    if (l.pdl && drv.launchKernelEx) {
      CUlaunchConfig config{};
      config.gridDimX = l.grid[0];
      config.gridDimY = l.grid[1];
      config.gridDimZ = l.grid[2];
      config.blockDimX = l.block[0];
      config.blockDimY = l.block[1];
      config.blockDimZ = l.block[2];
      config.sharedMemBytes = l.sharedBytes;
      config.hStream = stream;
      config.attrs = &chained;
      config.numAttrs = 1;
      res = drv.launchKernelEx(&config, l.func, params.data() + l.firstSlot,
                               nullptr);
    } else {
      res = drv.launchKernel(l.func, l.grid[0], l.grid[1], l.grid[2],
                             l.block[0], l.block[1], l.block[2],
                             l.sharedBytes, stream,
                             params.data() + l.firstSlot, nullptr);
    }
    if (res != CUDA_SUCCESS) {
      std::ostringstream func;
      func << static_cast<const void *>(l.func);
      TORCH_CHECK(false, what, ": ",
                  l.pdl ? "cuLaunchKernelEx (chained)" : "cuLaunchKernel",
                  " of launch ", l.index,
                  " (CUfunction ", func.str(), ", grid ", l.grid[0], "x",
                  l.grid[1], "x", l.grid[2], ", block ", l.block[0], "x",
                  l.block[1], "x", l.block[2], ", shared ", l.sharedBytes,
                  " bytes) failed: ", errorName(res));
    }
  }
}


namespace {

// One plan launched once on `stream`, with the caller's scratch buffers
// (CompiledFlowGPU.run_step).
void launchOnce(py::handle obj, const py::list &tensors,
                const py::list &scratchTensors, uint64_t stream,
                const std::string &what) {
  if (!driver().error.empty())
    throw std::runtime_error("vortex native: " + driver().error);
  std::vector<c10::IValue> args;
  std::optional<c10::DeviceIndex> device;
  for (py::handle t : tensors) {
    if (t.is_none()) {
      args.emplace_back();
      continue;
    }
    at::Tensor tensor = py::cast<at::Tensor>(t);
    if (!device && tensor.is_cuda())
      device = tensor.device().index();
    args.emplace_back(std::move(tensor));
  }
  std::vector<uintptr_t> scratch;
  for (py::handle t : scratchTensors) {
    at::Tensor tensor = py::cast<at::Tensor>(t);
    if (!device && tensor.is_cuda())
      device = tensor.device().index();
    scratch.push_back(reinterpret_cast<uintptr_t>(tensor.data_ptr()));
  }
  Plan plan;
  try {
    convertPlan(plan, obj, args, device.value_or(0));
  } catch (const PlanError &e) {
    throw std::runtime_error(what + ": a malformed plan: " + e.what());
  }
  if (scratch.size() < plan.scratchOffsets.size())
    throw std::runtime_error(what + ": " + std::to_string(scratch.size()) +
                             " scratch buffers, the plan has " +
                             std::to_string(plan.scratchOffsets.size()));
  ensureContext(what, plan.device);
  launchKernels(what, plan, reinterpret_cast<CUstream>(
                                static_cast<uintptr_t>(stream)),
                scratch);
}

} // namespace

void bindPlan(py::module &m) {
  m.def("launch_plan", &launchOnce, py::arg("plan"), py::arg("tensors"),
        py::arg("scratch"), py::arg("stream"), py::arg("what"),
        "Launch a vortex.runtime.plan.Plan once on `stream`: `tensors` are "
        "the op's arguments (None where unused), `scratch` one tensor per "
        "scratch buffer.");
}

} // namespace vortex_native
