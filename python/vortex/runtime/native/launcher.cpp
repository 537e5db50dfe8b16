//===- launcher.cpp - Native CUDA launcher for vortex torch ops -----------===//
//
// A torch C++ extension that gives the dynamically defined `vortex::<op>`
// torch ops (all arguments Tensors, no results) a boxed CUDA kernel which
// launches precompiled kernels (CUfunction handles loaded by Python through
// the CUDA driver) with a few microseconds of host overhead:
//
//   mod.register_cuda_impl("vortex::op", num_args, planner)
//
// On a call the kernel hashes the arguments' data pointers, dtypes, shapes,
// contiguity and devices into a key and looks it up in the op's plan cache.
// On a miss it takes the GIL and calls `planner(list_of_tensors)`, which
// validates the arguments (raising ValueError) and returns
//
//   (scratch, launches)
//   scratch  = [nbytes, ...]
//   launches = [(func, (gx, gy, gz), (bx, by, bz), shared_bytes, params,
//                pdl), ...]
//   params   = [("arg", i), ("scratch", j, numel), ("ptr", address, numel),
//               ("i32", v), ("i64", v)]
//   pdl      = launch with programmatic stream serialization (cuLaunchKernelEx;
//              the kernel waits on the one before it, docs/gpu.md)
//
// which is converted once into a `Plan` holding no Python object. Every call
// then allocates the scratch buffers from torch's caching allocator, patches
// their addresses into a copy of the plan's parameter words and calls
// cuLaunchKernel on the current stream; hits never take the GIL and never
// synchronize the host.
//
// Registering an op again is a no-op when the planner is the same object
// (and num_args the same), a RuntimeError otherwise; unregister_cuda_impl
// removes a registration (while no call of the op is in flight). The
// registry is never destroyed, so kernels stay registered until exit.
//
//===----------------------------------------------------------------------===//

#include <torch/extension.h>
#include <torch/library.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/SmallVector.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

//===----------------------------------------------------------------------===//
// CUDA driver entry points
//===----------------------------------------------------------------------===//

// The driver is looked up at run time rather than linked: the build machine
// may lack libcuda, and torch has loaded it into the process anyway.
struct Driver {
  using LaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned,
                                      unsigned, unsigned, unsigned, unsigned,
                                      unsigned, CUstream, void **, void **);
  using LaunchKernelExFn = CUresult (*)(const CUlaunchConfig *, CUfunction,
                                        void **, void **);
  using GetErrorNameFn = CUresult (*)(CUresult, const char **);
  using CtxGetCurrentFn = CUresult (*)(CUcontext *);
  using CtxSetCurrentFn = CUresult (*)(CUcontext);
  using DeviceGetFn = CUresult (*)(CUdevice *, int);
  using PrimaryCtxRetainFn = CUresult (*)(CUcontext *, CUdevice);

  LaunchKernelFn launchKernel = nullptr;
  // CUDA 12.0+; without it chained launches are ordinary ones (the kernels'
  // griddepcontrol.wait then returns at once).
  LaunchKernelExFn launchKernelEx = nullptr;
  GetErrorNameFn getErrorName = nullptr;
  CtxGetCurrentFn ctxGetCurrent = nullptr;
  CtxSetCurrentFn ctxSetCurrent = nullptr;
  DeviceGetFn deviceGet = nullptr;
  PrimaryCtxRetainFn primaryCtxRetain = nullptr;
  // Why the driver is unusable; empty when every entry point was found.
  std::string error;
};

template <typename Fn>
void lookUp(void *lib, const char *name, Fn &fn, std::string &error) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn && error.empty())
    error = std::string("libcuda.so.1 has no symbol ") + name;
}

Driver loadDriver() {
  Driver d;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    d.error = std::string("cannot load libcuda.so.1: ") +
              (why ? why : "unknown error");
    return d;
  }
  // The unversioned names: none of these entry points has a _v2 ABI, and
  // the stream is always explicit, so no _ptsz variant is needed.
  lookUp(lib, "cuLaunchKernel", d.launchKernel, d.error);
  d.launchKernelEx =
      reinterpret_cast<Driver::LaunchKernelExFn>(dlsym(lib, "cuLaunchKernelEx"));
  lookUp(lib, "cuGetErrorName", d.getErrorName, d.error);
  lookUp(lib, "cuCtxGetCurrent", d.ctxGetCurrent, d.error);
  lookUp(lib, "cuCtxSetCurrent", d.ctxSetCurrent, d.error);
  lookUp(lib, "cuDeviceGet", d.deviceGet, d.error);
  lookUp(lib, "cuDevicePrimaryCtxRetain", d.primaryCtxRetain, d.error);
  return d;
}

const Driver &driver() {
  static const Driver d = loadDriver();
  return d;
}

std::string errorName(CUresult result) {
  const char *name = nullptr;
  if (driver().getErrorName &&
      driver().getErrorName(result, &name) == CUDA_SUCCESS && name)
    return name;
  return "CUresult " + std::to_string(static_cast<int>(result));
}

// A thread that has made no CUDA runtime call has no current driver context
// even when the runtime's device already is `device` (the CUDAGuard then does
// not call cudaSetDevice). Bind the device's primary context, as the runtime
// would on its first call. The retained reference is deliberately kept: the
// runtime holds the primary context for the life of the process anyway.
void ensureContext(const std::string &opName, c10::DeviceIndex device) {
  const Driver &drv = driver();
  CUcontext ctx = nullptr;
  if (drv.ctxGetCurrent(&ctx) == CUDA_SUCCESS && ctx)
    return;
  CUdevice dev = 0;
  CUresult res = drv.deviceGet(&dev, device);
  if (res == CUDA_SUCCESS)
    res = drv.primaryCtxRetain(&ctx, dev);
  if (res == CUDA_SUCCESS)
    res = drv.ctxSetCurrent(ctx);
  TORCH_CHECK(res == CUDA_SUCCESS, opName,
              ": cannot make the primary context of cuda:",
              static_cast<int>(device), " current: ", errorName(res));
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

// Scratch buffers share one allocation, each starting at this alignment.
constexpr size_t kScratchAlign = 256;

struct Launch {
  CUfunction func;
  unsigned grid[3];
  unsigned block[3];
  unsigned sharedBytes;
  uint32_t firstSlot; // first of this launch's words in Plan::slots
  uint32_t index;     // position in the planner's list, for messages
  bool pdl;           // programmatic stream serialization
};

// Parameter words to overwrite with a scratch buffer's address per call.
struct ScratchPatch {
  uint32_t slot;
  uint32_t buffer;
};

// A planner result in launchable form. Every kernel parameter takes one
// 64-bit word (an i32 uses its low half: cuLaunchKernel reads only as many
// bytes as the parameter has), so a launch's `void *params[]` is just the
// addresses of consecutive words.
struct Plan;

// A plan's launches instantiated as one CUDA graph for one stream, with the
// scratch it was captured with. One graph launch costs about one kernel
// launch on the host, so a step of several kernels gets cheaper.
struct StepGraph {
  cudaStream_t stream = nullptr;
  cudaGraphExec_t exec = nullptr;
  c10::DataPtr scratch; // held while the graph exists
  size_t bytes = 0;
};

// Scratch held by step graphs, over all plans; past the budget
// (VORTEX_GRAPH_SCRATCH_BYTES, default 512 MiB) steps launch kernel by
// kernel with per-call scratch.
std::atomic<size_t> graphScratchBytes{0};

size_t graphScratchBudget() {
  static const size_t budget = [] {
    const char *env = std::getenv("VORTEX_GRAPH_SCRATCH_BYTES");
    return env && *env ? static_cast<size_t>(std::strtoull(env, nullptr, 10))
                       : size_t(512) << 20;
  }();
  return budget;
}

// Calls with one plan and stream before its graph is built: a signature
// seen once (a prefill shape) does not pay for an instantiation.
constexpr unsigned kGraphAfterCalls = 2;

struct Plan {
  c10::DeviceIndex device = 0;
  std::vector<size_t> scratchOffsets;
  size_t scratchBytes = 0;
  std::vector<uint64_t> slots; // argument pointers baked in (they are keyed)
  std::vector<ScratchPatch> patches;
  std::vector<Launch> launches;

  // Per-stream graphs (argument pointers are part of the plan's key, so a
  // graph stays valid for as long as the plan is cached).
  mutable std::mutex graphMutex;
  mutable std::vector<StepGraph> graphs;
  mutable std::vector<std::pair<cudaStream_t, unsigned>> callsPerStream;

  Plan() = default;
  Plan(const Plan &) = delete;
  ~Plan() {
    for (StepGraph &g : graphs) {
      // The graph may still run: let it finish before its exec and scratch
      // go (plans are dropped only when the plan cache is cleared).
      cudaStreamSynchronize(g.stream);
      cudaGraphExecDestroy(g.exec);
      graphScratchBytes -= g.bytes;
    }
  }
};

// Thrown while converting a planner result; reported as RuntimeError.
struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string describe(py::handle obj) {
  try {
    std::string text = py::repr(obj);
    return text.size() > 80 ? text.substr(0, 77) + "..." : text;
  } catch (py::error_already_set &) {
    return "<unprintable>";
  }
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

// Appends one ("arg", i) / ("scratch", j, numel) / ("ptr", address, numel) /
// ("i32", v) / ("i64", v)
// parameter of a launch to `plan.slots`.
void convertParam(Plan &plan, py::handle item, const std::string &what,
                  at::ArrayRef<c10::IValue> args) {
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  py::sequence param = asSequence(item, what);
  size_t length = py::len(param);
  if (length == 0 || !PyUnicode_Check(param[0].ptr()))
    throw PlanError(what + " must start with a kind string, got " +
                    describe(item));
  std::string kind = py::cast<std::string>(param[0]);
  size_t want = kind == "scratch" || kind == "ptr" ? 3 : 2;
  if (length != want)
    throw PlanError(what + " must have " + std::to_string(want) +
                    " items, got " + describe(item));

  if (kind == "arg") {
    int64_t i = asIndex(param[1], what + " argument index", args.size(),
                        "tensor arguments");
    const at::Tensor &t = args[i].toTensor();
    if (t.device() != c10::Device(c10::kCUDA, plan.device))
      throw PlanError(what + ": argument " + std::to_string(i) + " is on " +
                      t.device().str() + ", the plan on cuda:" +
                      std::to_string(plan.device));
    pushDescriptor(plan, reinterpret_cast<uintptr_t>(t.data_ptr()),
                   t.numel());
  } else if (kind == "scratch") {
    int64_t j = asIndex(param[1], what + " scratch index",
                        plan.scratchOffsets.size(), "scratch buffers");
    int64_t numel = asInt(param[2], what + " numel", 0, kMax64);
    auto slot = static_cast<uint32_t>(plan.slots.size());
    auto buffer = static_cast<uint32_t>(j);
    plan.patches.push_back({slot, buffer});
    plan.patches.push_back({slot + 1, buffer});
    pushDescriptor(plan, 0, numel);
  } else if (kind == "ptr") {
    // A buffer the runtime owns for the flow's lifetime (the guards' status
    // words): its address is part of the plan.
    int64_t address = asInt(param[1], what + " address", 1, kMax64);
    int64_t numel = asInt(param[2], what + " numel", 1, kMax64);
    pushDescriptor(plan, static_cast<uint64_t>(address), numel);
  } else if (kind == "i32") {
    auto v = static_cast<int32_t>(
        asInt(param[1], what + " value", std::numeric_limits<int32_t>::min(),
              std::numeric_limits<int32_t>::max()));
    uint64_t word = 0;
    std::memcpy(&word, &v, sizeof(v)); // the low (first) 4 bytes
    plan.slots.push_back(word);
  } else if (kind == "i64") {
    int64_t v = asInt(param[1], what + " value", kMin64, kMax64);
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
  py::sequence launch = asSequence(item, what, 6);
  Launch l{};
  l.func = asFunction(launch[0], what + " func");
  py::sequence grid = asSequence(launch[1], what + " grid", 3);
  py::sequence block = asSequence(launch[2], what + " block", 3);
  bool empty = false;
  for (int d = 0; d < 3; ++d) {
    std::string axis = "[" + std::to_string(d) + "]";
    l.grid[d] = static_cast<unsigned>(
        asInt(grid[d], what + " grid" + axis, 0, kMaxU32));
    l.block[d] = static_cast<unsigned>(
        asInt(block[d], what + " block" + axis, 1, kMaxU32));
    empty |= l.grid[d] == 0;
  }
  l.sharedBytes = static_cast<unsigned>(
      asInt(launch[3], what + " shared_bytes", 0, kMaxU32));
  l.firstSlot = static_cast<uint32_t>(plan.slots.size());
  l.index = index;
  if (!PyBool_Check(launch[5].ptr()))
    throw PlanError(what + " pdl must be a bool, got " + describe(launch[5]));
  l.pdl = launch[5].ptr() == Py_True;

  size_t firstPatch = plan.patches.size();
  py::sequence params = asSequence(launch[4], what + " params");
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

// Converts `(scratch, launches)`; needs the GIL.
std::shared_ptr<const Plan> convertPlan(py::handle result,
                                        at::ArrayRef<c10::IValue> args) {
  auto plan = std::make_shared<Plan>();
  const at::Tensor &first = args[0].toTensor();
  if (!first.is_cuda())
    throw PlanError("argument 0 is on " + first.device().str() +
                    ", not on a CUDA device");
  plan->device = first.device().index();

  py::sequence top = asSequence(result, "the plan (scratch, launches)", 2);
  py::sequence scratch = asSequence(top[0], "the plan's scratch sizes");
  size_t numScratch = py::len(scratch);
  for (size_t j = 0; j < numScratch; ++j) {
    int64_t nbytes = asInt(scratch[j], "scratch " + std::to_string(j) +
                                           " size",
                           0, int64_t(1) << 48);
    plan->scratchOffsets.push_back(plan->scratchBytes);
    plan->scratchBytes += (static_cast<size_t>(nbytes) + kScratchAlign - 1) /
                          kScratchAlign * kScratchAlign;
  }

  py::sequence launches = asSequence(top[1], "the plan's launches");
  size_t numLaunches = py::len(launches);
  for (size_t i = 0; i < numLaunches; ++i)
    convertLaunch(*plan, launches[i], static_cast<uint32_t>(i), args);
  return plan;
}

//===----------------------------------------------------------------------===//
// Plan cache
//===----------------------------------------------------------------------===//

// Inline capacity covers ~12 tensors of rank 4 without touching the heap.
using Key = c10::SmallVector<int64_t, 96>;

// The key of a call: the device of argument 0, then per tensor its data
// pointer, a word packing dtype / rank / contiguity / device, and its sizes.
// Strides are left out: the planner accepts only contiguous tensors, and
// contiguity with the sizes determines them.
uint64_t buildKey(const std::string &opName, at::ArrayRef<c10::IValue> args,
                  Key &key) {
  for (size_t i = 0; i < args.size(); ++i) {
    TORCH_CHECK_VALUE(args[i].isTensor() && args[i].toTensor().defined(),
                      opName, ": argument ", i, " is not a defined Tensor");
    const at::Tensor &t = args[i].toTensor();
    c10::Device device = t.device();
    if (i == 0)
      key.push_back(device.index());
    at::IntArrayRef sizes = t.sizes();
    uint64_t packed = static_cast<uint64_t>(t.scalar_type()) |
                      static_cast<uint64_t>(sizes.size()) << 8 |
                      static_cast<uint64_t>(t.is_contiguous()) << 16 |
                      static_cast<uint64_t>(device.type()) << 24 |
                      static_cast<uint64_t>(uint8_t(device.index())) << 32;
    key.push_back(
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data_ptr())));
    key.push_back(static_cast<int64_t>(packed));
    key.append(sizes.begin(), sizes.end());
  }
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (int64_t word : key) {
    hash ^= static_cast<uint64_t>(word);
    hash *= 0x9e3779b97f4a7c15ULL;
    hash ^= hash >> 29;
  }
  return hash;
}

class PlanCache {
public:
  // Bounded so that ever-changing pointers (a caller that does not reuse its
  // buffers) cannot grow it without limit; cleared when full.
  static constexpr size_t kMaxEntries = 4096;

  std::shared_ptr<const Plan> lookup(const Key &key, uint64_t hash) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const Entry *e = find(key, hash)) {
      ++hits_;
      return e->plan;
    }
    ++misses_;
    return nullptr;
  }

  void insert(const Key &key, uint64_t hash,
              std::shared_ptr<const Plan> plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (find(key, hash)) // planned concurrently by another thread
      return;
    if (entries_.size() >= kMaxEntries)
      entries_.clear();
    entries_.emplace(hash,
                     Entry{std::vector<int64_t>(key.begin(), key.end()),
                           std::move(plan)});
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
    hits_ = misses_ = 0;
  }

  std::tuple<uint64_t, uint64_t, uint64_t> stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {hits_, misses_, entries_.size()};
  }

private:
  struct Entry {
    std::vector<int64_t> key;
    std::shared_ptr<const Plan> plan;
  };

  const Entry *find(const Key &key, uint64_t hash) const {
    auto range = entries_.equal_range(hash);
    for (auto it = range.first; it != range.second; ++it) {
      const std::vector<int64_t> &k = it->second.key;
      if (k.size() == key.size() &&
          std::memcmp(k.data(), key.data(), k.size() * sizeof(int64_t)) == 0)
        return &it->second;
    }
    return nullptr;
  }

  std::mutex mutex_;
  std::unordered_multimap<uint64_t, Entry> entries_;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

//===----------------------------------------------------------------------===//
// The boxed kernel
//===----------------------------------------------------------------------===//

// What one registered op needs at call time; shared by its kernel functor
// and the registry.
struct OpState {
  std::string qualname;
  size_t numArgs = 0;
  PyObject *planner = nullptr; // strong reference
  PlanCache cache;

  ~OpState() {
    // The registry is never destroyed, so this runs only when an op is
    // unregistered (from Python); never touch Python after finalization.
    if (planner && Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      Py_DECREF(planner);
    }
  }
};

// Calls the planner on a miss. Python's ValueError becomes c10::ValueError
// with the same message (so Python sees ValueError again); anything else,
// including a malformed plan, becomes c10::Error (RuntimeError).
std::shared_ptr<const Plan> makePlan(const OpState &op,
                                     at::ArrayRef<c10::IValue> args) {
  std::shared_ptr<const Plan> plan;
  std::string error;
  bool isValueError = false;
  {
    py::gil_scoped_acquire gil;
    try {
      py::list tensors(args.size());
      for (size_t i = 0; i < args.size(); ++i)
        tensors[i] = py::cast(args[i].toTensor());
      py::object result =
          py::reinterpret_borrow<py::object>(op.planner)(tensors);
      plan = convertPlan(result, args);
    } catch (py::error_already_set &e) {
      // Read the message while the GIL is held; `e` is released here too.
      isValueError = e.matches(PyExc_ValueError);
      error = py::str(e.value());
      if (!isValueError)
        error = "planner raised " +
                py::cast<std::string>(e.type().attr("__name__")) + ": " +
                error;
    } catch (const PlanError &e) {
      error = std::string("the planner returned a malformed plan: ") +
              e.what();
    } catch (const std::exception &e) {
      error = std::string("planning failed: ") + e.what();
    }
  }
  if (plan)
    return plan;
  if (isValueError)
    TORCH_CHECK_VALUE(false, error);
  TORCH_CHECK(false, op.qualname, ": ", error);
}

// Queues the plan's kernels on `stream` with the given scratch base.
void launchKernels(const OpState &op, const Plan &plan, CUstream stream,
                   uintptr_t scratchBase) {
  c10::SmallVector<uint64_t, 256> slots(plan.slots.begin(), plan.slots.end());
  for (const ScratchPatch &p : plan.patches)
    slots[p.slot] = scratchBase + plan.scratchOffsets[p.buffer];
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
      TORCH_CHECK(false, op.qualname, ": ",
                  l.pdl ? "cuLaunchKernelEx (chained)" : "cuLaunchKernel",
                  " of launch ", l.index,
                  " (CUfunction ", func.str(), ", grid ", l.grid[0], "x",
                  l.grid[1], "x", l.grid[2], ", block ", l.block[0], "x",
                  l.block[1], "x", l.block[2], ", shared ", l.sharedBytes,
                  " bytes) failed: ", errorName(res));
    }
  }
}

// Captures the plan's launches on a private stream into a graph for
// `stream`, with scratch of its own; null when the scratch budget is spent
// or capture fails (the caller then launches kernel by kernel).
cudaGraphExec_t buildGraph(const OpState &op, const Plan &plan,
                           cudaStream_t stream) {
  size_t bytes = plan.scratchBytes;
  if (graphScratchBytes + bytes > graphScratchBudget())
    return nullptr;
  StepGraph g;
  g.stream = stream;
  if (bytes) {
    // Allocated on `stream`, the only stream the graph runs on.
    g.scratch = c10::cuda::CUDACachingAllocator::get()->allocate(bytes);
    g.bytes = bytes;
  }
  cudaStream_t side = nullptr;
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  cudaGraph_t graph = nullptr;
  bool ok = cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal) ==
            cudaSuccess;
  if (ok) {
    try {
      launchKernels(op, plan, side,
                    reinterpret_cast<uintptr_t>(g.scratch.get()));
    } catch (...) {
      ok = false;
    }
    ok &= cudaStreamEndCapture(side, &graph) == cudaSuccess;
  }
  ok = ok && cudaGraphInstantiate(&g.exec, graph, 0) == cudaSuccess;
  if (graph)
    cudaGraphDestroy(graph);
  cudaStreamDestroy(side);
  if (!ok) {
    cudaGetLastError();
    return nullptr;
  }
  graphScratchBytes += g.bytes;
  plan.graphs.push_back(std::move(g));
  return plan.graphs.back().exec;
}

// The plan's graph for `stream`, built on the kGraphAfterCalls-th call.
cudaGraphExec_t graphFor(const OpState &op, const Plan &plan,
                         cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(plan.graphMutex);
  for (const StepGraph &g : plan.graphs)
    if (g.stream == stream)
      return g.exec;
  unsigned *calls = nullptr;
  for (auto &entry : plan.callsPerStream)
    if (entry.first == stream)
      calls = &entry.second;
  if (!calls) {
    plan.callsPerStream.emplace_back(stream, 0);
    calls = &plan.callsPerStream.back().second;
  }
  if (++*calls < kGraphAfterCalls)
    return nullptr;
  return buildGraph(op, plan, stream);
}

// Queues the plan on the current stream of its device: as one graph launch
// once the signature repeats, kernel by kernel (with per-call scratch from
// the caching allocator) otherwise and while the stream is being captured
// (the launches then become part of the caller's graph).
void launchPlan(const OpState &op, const Plan &plan) {
  // Restores the caller's device (and so its context) on return.
  c10::cuda::CUDAGuard guard(plan.device);
  ensureContext(op.qualname, plan.device);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(plan.device).stream();

  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    capture = cudaStreamCaptureStatusActive; // be conservative
  }
  if (capture == cudaStreamCaptureStatusNone) {
    if (cudaGraphExec_t exec = graphFor(op, plan, stream)) {
      cudaError_t err = cudaGraphLaunch(exec, stream);
      TORCH_CHECK(err == cudaSuccess, op.qualname,
                  ": cudaGraphLaunch failed: ", cudaGetErrorString(err));
      return;
    }
  }
  // One caching-allocator block for all scratch buffers of this call. It is
  // freed on return, after the launches are queued: the allocator reuses it
  // only for later work on this stream, and during graph capture it comes
  // from (and returns to) the graph's private pool.
  c10::DataPtr scratch;
  if (plan.scratchBytes)
    scratch = c10::cuda::CUDACachingAllocator::get()->allocate(
        plan.scratchBytes);
  launchKernels(op, plan, stream, reinterpret_cast<uintptr_t>(scratch.get()));
}

class VortexKernel final : public c10::OperatorKernel {
public:
  explicit VortexKernel(std::shared_ptr<OpState> state)
      : state_(std::move(state)) {}

  void operator()(const c10::OperatorHandle & /*op*/,
                  c10::DispatchKeySet /*keys*/, torch::jit::Stack *stack) {
    OpState &op = *state_;
    TORCH_INTERNAL_ASSERT(stack->size() >= op.numArgs, op.qualname,
                          ": expected ", op.numArgs, " arguments on the "
                          "stack, got ", stack->size());
    at::ArrayRef<c10::IValue> args = torch::jit::last(*stack, op.numArgs);
    Key key;
    uint64_t hash = buildKey(op.qualname, args, key);
    std::shared_ptr<const Plan> plan = op.cache.lookup(key, hash);
    if (!plan) {
      plan = makePlan(op, args);
      op.cache.insert(key, hash, plan);
    }
    launchPlan(op, *plan);
    // The op returns nothing; the arguments stay alive until here.
    torch::jit::drop(*stack, op.numArgs);
  }

private:
  std::shared_ptr<OpState> state_;
};

//===----------------------------------------------------------------------===//
// Registry and Python API
//===----------------------------------------------------------------------===//

struct Registration {
  std::unique_ptr<torch::Library> library; // owns the CUDA kernel
  std::shared_ptr<OpState> state;
};

std::mutex registryMutex;

// Leaked on purpose: destroying it at exit would deregister kernels from a
// dispatcher that may be gone and drop planners after Python finalized.
std::map<std::string, Registration> &registry() {
  static auto *r = new std::map<std::string, Registration>();
  return *r;
}

std::shared_ptr<OpState> findState(const std::string &qualname) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry().find(qualname);
  if (it == registry().end())
    throw py::value_error("vortex native: no CUDA implementation of " +
                          qualname + " is registered");
  return it->second.state;
}

// Checks that `qualname` names an op of namespace vortex whose schema takes
// exactly `numArgs` Tensors and returns nothing; returns the name to give
// Library::impl (the op name and overload, without namespace).
std::string checkSchema(const std::string &qualname, int64_t numArgs) {
  const std::string prefix = "vortex::";
  if (qualname.compare(0, prefix.size(), prefix) != 0 ||
      qualname.size() == prefix.size())
    throw py::value_error("vortex native: " + qualname +
                          " is not a vortex::<op> name");
  std::string name = qualname.substr(prefix.size());
  size_t dot = name.find('.');
  std::string base = name.substr(0, dot);
  std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);

  auto handle = c10::Dispatcher::singleton().findSchema(
      c10::OperatorName(prefix + base, overload));
  if (!handle)
    throw py::value_error("vortex native: " + qualname +
                          " is not defined (torch.library define it first)");
  const c10::FunctionSchema &schema = handle->schema();
  const auto &arguments = schema.arguments();
  if (static_cast<int64_t>(arguments.size()) != numArgs)
    throw py::value_error("vortex native: " + qualname + " takes " +
                          std::to_string(arguments.size()) +
                          " arguments, num_args is " +
                          std::to_string(numArgs));
  for (const c10::Argument &arg : arguments)
    if (arg.type()->kind() != c10::TypeKind::TensorType)
      throw py::value_error("vortex native: argument " + arg.name() + " of " +
                            qualname + " is not a Tensor");
  if (!schema.returns().empty())
    throw py::value_error("vortex native: " + qualname +
                          " must return nothing");
  return name;
}

void registerCudaImpl(const std::string &qualname, int64_t numArgs,
                      py::object planner) {
  if (!driver().error.empty())
    throw std::runtime_error("vortex native: " + driver().error);
  if (!PyCallable_Check(planner.ptr()))
    throw py::type_error("vortex native: the planner must be callable");
  if (numArgs < 1)
    throw py::value_error("vortex native: num_args must be at least 1");
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto it = registry().find(qualname);
    if (it != registry().end()) {
      const OpState &old = *it->second.state;
      if (old.planner == planner.ptr() &&
          old.numArgs == static_cast<size_t>(numArgs))
        return; // same registration again: a no-op
      throw std::runtime_error(
          "vortex native: a CUDA implementation of " + qualname +
          " is already registered with another planner "
          "(unregister_cuda_impl it first)");
    }
  }
  std::string name = checkSchema(qualname, numArgs);

  auto state = std::make_shared<OpState>();
  state->qualname = qualname;
  state->numArgs = static_cast<size_t>(numArgs);
  state->planner = planner.release().ptr();

  Registration reg;
  reg.library = std::make_unique<torch::Library>(
      torch::Library::IMPL, "vortex", c10::DispatchKey::CUDA, __FILE__,
      __LINE__);
  reg.library->impl(name.c_str(),
                    torch::CppFunction::makeFromBoxedFunctor(
                        std::make_unique<VortexKernel>(state)));
  reg.state = std::move(state);

  std::lock_guard<std::mutex> lock(registryMutex);
  registry().emplace(qualname, std::move(reg));
}

bool unregisterCudaImpl(const std::string &qualname) {
  Registration reg;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto it = registry().find(qualname);
    if (it == registry().end())
      return false;
    reg = std::move(it->second);
    registry().erase(it);
  }
  // Destroyed outside the lock: dropping the planner may run Python code.
  reg.library.reset();
  return true;
}

std::tuple<uint64_t, uint64_t, uint64_t>
planCacheStats(const std::string &qualname) {
  return findState(qualname)->cache.stats();
}

void clearPlanCache(const std::optional<std::string> &qualname) {
  if (qualname) {
    findState(*qualname)->cache.clear();
    return;
  }
  std::vector<std::shared_ptr<OpState>> states;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    for (auto &entry : registry())
      states.push_back(entry.second.state);
  }
  for (auto &state : states)
    state->cache.clear();
}

std::vector<std::string> registeredOps() {
  std::lock_guard<std::mutex> lock(registryMutex);
  std::vector<std::string> names;
  for (auto &entry : registry())
    names.push_back(entry.first);
  return names;
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Native CUDA launcher of vortex torch ops (vortex.native)";
  m.def("register_cuda_impl", &registerCudaImpl, py::arg("qualname"),
        py::arg("num_args"), py::arg("planner"),
        "Register the CUDA kernel of `qualname` (\"vortex::op\"), whose "
        "schema takes `num_args` Tensors and returns nothing. "
        "`planner(tensors)` is called on plan-cache misses. Registering the "
        "same op again is a no-op with the same planner object and "
        "num_args, a RuntimeError otherwise.");
  m.def("unregister_cuda_impl", &unregisterCudaImpl, py::arg("qualname"),
        "Remove the CUDA kernel of `qualname` and its plan cache; False if "
        "none was registered. No call of the op may be in flight.");
  m.def("plan_cache_stats", &planCacheStats, py::arg("qualname"),
        "(hits, misses, size) of the op's plan cache since registration "
        "or the last clear_plan_cache.");
  m.def("clear_plan_cache", &clearPlanCache,
        py::arg("qualname") = py::none(),
        "Empty the plan cache (and zero its counters) of one op, or of all "
        "ops when qualname is None.");
  m.def("registered_ops", &registeredOps,
        "Names of the ops with a registered CUDA kernel.");
  m.attr("MAX_PLANS") = py::int_(PlanCache::kMaxEntries);
  m.attr("SCRATCH_ALIGNMENT") = py::int_(kScratchAlign);
}
