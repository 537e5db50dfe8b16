//===- driver.h - The one libcuda loader of the runtime ---------*- C++ -*-===//
//
// The CUDA driver entry points the runtime uses, looked up once at run time
// (the build machine may lack libcuda; torch has loaded it into the process
// anyway). The native launcher launches through it, and Python loads
// modules and reads kernel attributes through it (vortex.runtime.driver),
// so the process loads libcuda once.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_NATIVE_DRIVER_H
#define VORTEX_NATIVE_DRIVER_H

#include <torch/extension.h>

#include <c10/core/Device.h>
#include <cuda.h>

#include <string>

namespace vortex_native {

struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **) = nullptr;
  // CUDA 12.0+; without it chained launches are ordinary ones (the kernels'
  // griddepcontrol.wait then returns at once).
  CUresult (*launchKernelEx)(const CUlaunchConfig *, CUfunction, void **,
                             void **) = nullptr;
  CUresult (*getErrorName)(CUresult, const char **) = nullptr;
  CUresult (*getErrorString)(CUresult, const char **) = nullptr;
  CUresult (*ctxGetCurrent)(CUcontext *) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*deviceGet)(CUdevice *, int) = nullptr;
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*moduleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned,
                               CUjit_option *, void **) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule,
                                const char *) = nullptr;
  CUresult (*moduleUnload)(CUmodule) = nullptr;
  CUresult (*funcGetAttribute)(int *, CUfunction_attribute,
                               CUfunction) = nullptr;
  CUresult (*funcSetAttribute)(CUfunction, CUfunction_attribute,
                               int) = nullptr;
  CUresult (*occupancy)(int *, CUfunction, int, size_t) = nullptr;
  // Why the driver is unusable; empty when every entry point was found.
  std::string error;
};

/// The process's driver, loaded on first use.
const Driver &driver();

/// "CUDA_ERROR_X (description)" for `result`.
std::string errorName(CUresult result);

/// Makes `device`'s primary context current on this thread if none is.
void ensureContext(const std::string &what, c10::DeviceIndex device);

/// Adds the driver's Python functions (vortex.runtime.driver.NativeDriver).
void bindDriver(pybind11::module &m);

} // namespace vortex_native

#endif // VORTEX_NATIVE_DRIVER_H
