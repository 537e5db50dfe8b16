//===- launcher.cpp - Native CUDA launcher for vortex torch ops -----------===//
//
// A torch C++ extension that gives the dynamically defined `vortex::<op>`
// torch ops (all arguments Tensors, no results) a boxed CUDA kernel which
// launches precompiled kernels (CUfunction handles loaded by Python through
// this module's driver, driver.cpp) with a few microseconds of host
// overhead:
//
//   mod.register_cuda_impl("vortex::op", num_args, planner)
//
// On a call the kernel hashes the arguments' data pointers, dtypes, shapes,
// contiguity and devices into a key and looks it up in the op's plan cache.
// On a miss it takes the GIL and calls `planner(list_of_tensors)`, which
// validates the arguments (raising ValueError) and returns a
// vortex.runtime.plan.Plan (that module describes it; plan.cpp reads it),
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

#include "driver.h"
#include "plan.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
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

using namespace vortex_native;

namespace {

//===----------------------------------------------------------------------===//
// Plans and their graphs
//===----------------------------------------------------------------------===//

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

// A planner's result, cached per argument signature, with its per-stream
// graphs (argument pointers are part of the key, so a graph stays valid for
// as long as the plan is cached).
struct CachedPlan {
  Plan plan;
  mutable std::mutex graphMutex;
  mutable std::vector<StepGraph> graphs;
  mutable std::vector<std::pair<cudaStream_t, unsigned>> callsPerStream;

  CachedPlan() = default;
  CachedPlan(const CachedPlan &) = delete;
  ~CachedPlan() {
    for (StepGraph &g : graphs) {
      // The graph may still run: let it finish before its exec and scratch
      // go (plans are dropped only when the plan cache is cleared).
      cudaStreamSynchronize(g.stream);
      cudaGraphExecDestroy(g.exec);
      graphScratchBytes -= g.bytes;
    }
  }
};

// The scratch buffers' addresses in one allocation at `base`.
std::vector<uintptr_t> scratchAt(const Plan &plan, uintptr_t base) {
  std::vector<uintptr_t> out;
  for (size_t offset : plan.scratchOffsets)
    out.push_back(base + offset);
  return out;
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

  std::shared_ptr<const CachedPlan> lookup(const Key &key, uint64_t hash) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const Entry *e = find(key, hash)) {
      ++hits_;
      return e->plan;
    }
    ++misses_;
    return nullptr;
  }

  void insert(const Key &key, uint64_t hash,
              std::shared_ptr<const CachedPlan> plan) {
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
    std::shared_ptr<const CachedPlan> plan;
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
std::shared_ptr<const CachedPlan> makePlan(const OpState &op,
                                     at::ArrayRef<c10::IValue> args) {
  std::shared_ptr<const CachedPlan> plan;
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
      const at::Tensor &first = args[0].toTensor();
      if (!first.is_cuda())
        throw PlanError("argument 0 is on " + first.device().str() +
                        ", not on a CUDA device");
      auto cached = std::make_shared<CachedPlan>();
      convertPlan(cached->plan, result, args, first.device().index());
      plan = std::move(cached);
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

// Captures the plan's launches on a private stream into a graph for
// `stream`, with scratch of its own; null when the scratch budget is spent
// or capture fails (the caller then launches kernel by kernel).
cudaGraphExec_t buildGraph(const OpState &op, const CachedPlan &cp,
                           cudaStream_t stream) {
  const Plan &plan = cp.plan;
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
      launchKernels(op.qualname, plan, side,
                    scratchAt(plan, reinterpret_cast<uintptr_t>(
                                        g.scratch.get())));
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
  cp.graphs.push_back(std::move(g));
  return cp.graphs.back().exec;
}

// The plan's graph for `stream`, built on the kGraphAfterCalls-th call.
cudaGraphExec_t graphFor(const OpState &op, const CachedPlan &cp,
                         cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(cp.graphMutex);
  for (const StepGraph &g : cp.graphs)
    if (g.stream == stream)
      return g.exec;
  unsigned *calls = nullptr;
  for (auto &entry : cp.callsPerStream)
    if (entry.first == stream)
      calls = &entry.second;
  if (!calls) {
    cp.callsPerStream.emplace_back(stream, 0);
    calls = &cp.callsPerStream.back().second;
  }
  if (++*calls < kGraphAfterCalls)
    return nullptr;
  return buildGraph(op, cp, stream);
}

// Queues the plan on the current stream of its device: as one graph launch
// once the signature repeats, kernel by kernel (with per-call scratch from
// the caching allocator) otherwise and while the stream is being captured
// (the launches then become part of the caller's graph).
void launchPlan(const OpState &op, const CachedPlan &cp) {
  const Plan &plan = cp.plan;
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
    if (cudaGraphExec_t exec = graphFor(op, cp, stream)) {
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
  launchKernels(op.qualname, plan, stream,
                scratchAt(plan, reinterpret_cast<uintptr_t>(scratch.get())));
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
    std::shared_ptr<const CachedPlan> plan = op.cache.lookup(key, hash);
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
  m.doc() = "Native CUDA launcher of vortex torch ops (vortex.runtime.native)";
  bindDriver(m);
  bindPlan(m);
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
