//===- driver.cpp - The one libcuda loader of the runtime -----------------===//
//
// See driver.h. Module loading and attribute queries raise RuntimeError with
// the driver's error name; vortex.runtime.driver turns it into
// CudaDriverError.
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#include <dlfcn.h>

#include <cstdint>
#include <vector>

namespace py = pybind11;

namespace vortex_native {
namespace {

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
  // The entry points whose unversioned names are the current ABI (cuda.h
  // maps none of these to a _v2 symbol), and the stream is always explicit,
  // so no _ptsz variant is needed.
  lookUp(lib, "cuInit", d.init, d.error);
  lookUp(lib, "cuLaunchKernel", d.launchKernel, d.error);
  d.launchKernelEx = reinterpret_cast<decltype(d.launchKernelEx)>(
      dlsym(lib, "cuLaunchKernelEx"));
  lookUp(lib, "cuGetErrorName", d.getErrorName, d.error);
  lookUp(lib, "cuGetErrorString", d.getErrorString, d.error);
  lookUp(lib, "cuCtxGetCurrent", d.ctxGetCurrent, d.error);
  lookUp(lib, "cuCtxSetCurrent", d.ctxSetCurrent, d.error);
  lookUp(lib, "cuDeviceGet", d.deviceGet, d.error);
  lookUp(lib, "cuDevicePrimaryCtxRetain", d.primaryCtxRetain, d.error);
  lookUp(lib, "cuModuleLoadData", d.moduleLoadData, d.error);
  lookUp(lib, "cuModuleLoadDataEx", d.moduleLoadDataEx, d.error);
  lookUp(lib, "cuModuleGetFunction", d.moduleGetFunction, d.error);
  lookUp(lib, "cuModuleUnload", d.moduleUnload, d.error);
  lookUp(lib, "cuFuncGetAttribute", d.funcGetAttribute, d.error);
  lookUp(lib, "cuFuncSetAttribute", d.funcSetAttribute, d.error);
  lookUp(lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor", d.occupancy,
         d.error);
  return d;
}

const Driver &usable() {
  const Driver &d = driver();
  if (!d.error.empty())
    throw std::runtime_error("vortex native: " + d.error);
  return d;
}

void check(CUresult res, const std::string &what) {
  if (res != CUDA_SUCCESS)
    throw std::runtime_error(what + " failed: " + errorName(res));
}

template <typename T> T fromHandle(uint64_t handle) {
  return reinterpret_cast<T>(static_cast<uintptr_t>(handle));
}

template <typename T> uint64_t toHandle(T ptr) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ptr));
}

uint64_t currentContext() {
  const Driver &d = usable();
  check(d.init(0), "cuInit");
  CUcontext ctx = nullptr;
  check(d.ctxGetCurrent(&ctx), "cuCtxGetCurrent");
  return toHandle(ctx);
}

// A cubin, or PTX that the driver JIT-compiles (its error log in the
// message).
uint64_t loadModule(const py::bytes &image, bool ptx, const std::string &what) {
  const Driver &d = usable();
  std::string data = image;
  CUmodule mod = nullptr;
  if (!ptx) {
    check(d.moduleLoadData(&mod, data.data()), "cuModuleLoadData(" + what + ")");
    return toHandle(mod);
  }
  data.push_back('\0');
  std::vector<char> log(1 << 16, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(),
                    reinterpret_cast<void *>(static_cast<uintptr_t>(log.size()))};
  CUresult res = d.moduleLoadDataEx(&mod, data.data(), 2, options, values);
  if (res != CUDA_SUCCESS) {
    std::string text(log.data());
    throw std::runtime_error("cuModuleLoadDataEx(" + what + ") failed: " +
                             errorName(res) + (text.empty() ? "" : "\n" + text));
  }
  return toHandle(mod);
}

void unloadModule(uint64_t module) {
  if (driver().error.empty())
    driver().moduleUnload(fromHandle<CUmodule>(module));
}

uint64_t getFunction(uint64_t module, const std::string &name) {
  CUfunction f = nullptr;
  check(usable().moduleGetFunction(&f, fromHandle<CUmodule>(module),
                                   name.c_str()),
        "cuModuleGetFunction(" + name + ")");
  return toHandle(f);
}

int functionAttribute(uint64_t func, int attr) {
  int value = 0;
  check(usable().funcGetAttribute(&value,
                                  static_cast<CUfunction_attribute>(attr),
                                  fromHandle<CUfunction>(func)),
        "cuFuncGetAttribute(" + std::to_string(attr) + ")");
  return value;
}

void setFunctionAttribute(uint64_t func, int attr, int value) {
  check(usable().funcSetAttribute(fromHandle<CUfunction>(func),
                                  static_cast<CUfunction_attribute>(attr),
                                  value),
        "cuFuncSetAttribute(" + std::to_string(attr) + ", " +
            std::to_string(value) + ")");
}

int maxActiveBlocks(uint64_t func, int threads, size_t sharedBytes) {
  int active = 0;
  check(usable().occupancy(&active, fromHandle<CUfunction>(func), threads,
                           sharedBytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return active;
}

} // namespace

const Driver &driver() {
  static const Driver d = loadDriver();
  return d;
}

std::string errorName(CUresult result) {
  const Driver &d = driver();
  const char *name = nullptr;
  std::string out =
      d.getErrorName && d.getErrorName(result, &name) == CUDA_SUCCESS && name
          ? name
          : "CUresult " + std::to_string(static_cast<int>(result));
  const char *text = nullptr;
  if (d.getErrorString && d.getErrorString(result, &text) == CUDA_SUCCESS &&
      text)
    out += std::string(" (") + text + ")";
  return out;
}

// A thread that has made no CUDA runtime call has no current driver context
// even when the runtime's device already is `device` (the CUDAGuard then does
// not call cudaSetDevice). Bind the device's primary context, as the runtime
// would on its first call. The retained reference is deliberately kept: the
// runtime holds the primary context for the life of the process anyway.
void ensureContext(const std::string &what, c10::DeviceIndex device) {
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
  TORCH_CHECK(res == CUDA_SUCCESS, what,
              ": cannot make the primary context of cuda:",
              static_cast<int>(device), " current: ", errorName(res));
}

void bindDriver(py::module &m) {
  m.def("driver_error", [] { return driver().error; },
        "Why libcuda is unusable; empty when it loaded.");
  m.def("current_context", &currentContext,
        "cuInit, then the current context's handle (0 if none).");
  m.def("load_module", &loadModule, py::arg("image"), py::arg("ptx"),
        py::arg("what"),
        "Load a cubin (ptx=False) or PTX into the current context; the "
        "module's handle.");
  m.def("unload_module", &unloadModule, py::arg("module"));
  m.def("get_function", &getFunction, py::arg("module"), py::arg("name"));
  m.def("function_attribute", &functionAttribute, py::arg("func"),
        py::arg("attr"));
  m.def("set_function_attribute", &setFunctionAttribute, py::arg("func"),
        py::arg("attr"), py::arg("value"));
  m.def("max_active_blocks", &maxActiveBlocks, py::arg("func"),
        py::arg("threads"), py::arg("shared_bytes"),
        "CTAs of `func` resident on one multiprocessor.");
}

} // namespace vortex_native
