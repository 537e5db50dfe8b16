#===- cmake/VortexSanitizers.cmake - ASan/UBSan and libFuzzer builds -----===#
#
# Included by the top-level CMakeLists.txt after HandleLLVMOptions, before the
# subdirectories, so the flags below reach every vortex target (libraries,
# tools, the plugin, the C API and the test programs) and nothing else:
# Debian's libMLIR.so / libLLVM.so stay as they are (uninstrumented).
#
#   VORTEX_ENABLE_SANITIZERS=ON   -fsanitize=address,undefined
#                                 -fno-sanitize-recover=undefined
#                                 -fno-omit-frame-pointer (+ line tables)
#   VORTEX_ENABLE_FUZZER=ON       (clang only) -fsanitize=fuzzer-no-link on
#                                 every vortex target (coverage for libFuzzer),
#                                 and tools/vortex-fuzz linked with
#                                 -fsanitize=fuzzer
#
# scripts/test-sanitizers.sh configures build-asan with both, using clang-22
# (docs/fuzzing.md says why clang and not GCC). Run-time options: the
# VORTEX_*SAN_OPTIONS below are written into the lit site config and into
# <build>/sanitizer-env.sh, which the scripts source.
#
#===----------------------------------------------------------------------===#

set(VORTEX_SANITIZER_COMPILE_FLAGS)
set(VORTEX_SANITIZER_LINK_FLAGS)
set(VORTEX_SANITIZER_PRELOAD "")

if(VORTEX_ENABLE_SANITIZERS)
  list(APPEND VORTEX_SANITIZER_COMPILE_FLAGS
    -fsanitize=address,undefined
    # UB is an error, not a warning that scrolls by: abort at the first report.
    -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
  # File:line in reports without full debug info (links stay fast).
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND VORTEX_SANITIZER_COMPILE_FLAGS -gline-tables-only)
  else()
    list(APPEND VORTEX_SANITIZER_COMPILE_FLAGS -g1)
  endif()
  list(APPEND VORTEX_SANITIZER_LINK_FLAGS -fsanitize=address,undefined)

  # The ASan runtime as a shared library: an uninstrumented host (stock
  # mlir-opt loading VortexPlugin.so) runs with it in LD_PRELOAD so that the
  # plugin's __asan_* / __ubsan_* references resolve and malloc is
  # intercepted from the start.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(_vortex_asan_rt "libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so")
  else()
    set(_vortex_asan_rt "libasan.so")
  endif()
  execute_process(
    COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${_vortex_asan_rt}
    OUTPUT_VARIABLE VORTEX_SANITIZER_PRELOAD
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT EXISTS "${VORTEX_SANITIZER_PRELOAD}")
    message(WARNING "VORTEX_ENABLE_SANITIZERS: no ${_vortex_asan_rt} found "
      "(${VORTEX_SANITIZER_PRELOAD}); the plugin tests will not run")
    set(VORTEX_SANITIZER_PRELOAD "")
  else()
    # Through the symlink chain to the file itself (libasan.so -> .so.8).
    get_filename_component(VORTEX_SANITIZER_PRELOAD
      "${VORTEX_SANITIZER_PRELOAD}" REALPATH)
  endif()

  # HandleLLVMOptions added -Wl,-z,defs (it only leaves it out when LLVM's own
  # LLVM_USE_SANITIZER is set): instrumented shared objects reference the
  # sanitizer runtime, which only executables link.
  foreach(_var CMAKE_SHARED_LINKER_FLAGS CMAKE_MODULE_LINKER_FLAGS)
    string(REPLACE "-Wl,-z,defs" "" ${_var} "${${_var}}")
  endforeach()
  message(STATUS "Vortex: sanitizers on (${VORTEX_SANITIZER_COMPILE_FLAGS})")
endif()

if(VORTEX_ENABLE_FUZZER)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "VORTEX_ENABLE_FUZZER needs clang (libFuzzer); "
      "configure with -DCMAKE_CXX_COMPILER=clang++-22 "
      "-DCMAKE_C_COMPILER=clang-22 (scripts/test-sanitizers.sh does)")
  endif()
  # Coverage instrumentation for libFuzzer; harmless elsewhere (the ASan
  # runtime has no-op defaults for the callbacks).
  list(APPEND VORTEX_SANITIZER_COMPILE_FLAGS -fsanitize=fuzzer-no-link)
  message(STATUS "Vortex: libFuzzer coverage on (tools/vortex-fuzz)")
endif()

add_compile_options(${VORTEX_SANITIZER_COMPILE_FLAGS})
add_link_options(${VORTEX_SANITIZER_LINK_FLAGS})

# Run-time options of an instrumented vortex next to the uninstrumented
# Debian LLVM/MLIR (docs/fuzzing.md, "Sanitizer options"):
#  allow_user_poisoning=0  LLVM's headers poison and unpoison BumpPtrAllocator
#      slabs (llvm/Support/Allocator.h, under __has_feature(address_sanitizer)).
#      Inlined into vortex code they poison memory that libMLIR.so's copies of
#      the same allocator hand out again without unpoisoning: false reports.
#  detect_leaks=1 (default) stays on; abort_on_error=1 so that a report ends
#      the process with SIGABRT (lit, libFuzzer and `not --crash` see a crash).
#  UBSan: print_stacktrace=1; halt_on_error=1 (the code is also compiled with
#      -fno-sanitize-recover=undefined).
set(VORTEX_ASAN_OPTIONS
  "allow_user_poisoning=0:abort_on_error=1:detect_leaks=1"
  CACHE STRING "ASAN_OPTIONS for running an instrumented vortex")
set(VORTEX_UBSAN_OPTIONS "print_stacktrace=1:halt_on_error=1:abort_on_error=1"
  CACHE STRING "UBSAN_OPTIONS for running an instrumented vortex")
find_program(VORTEX_LLVM_SYMBOLIZER llvm-symbolizer
  HINTS ${LLVM_TOOLS_BINARY_DIR} NO_DEFAULT_PATH)
if(NOT VORTEX_LLVM_SYMBOLIZER)
  set(VORTEX_LLVM_SYMBOLIZER "")
endif()

if(VORTEX_ENABLE_SANITIZERS)
  file(WRITE ${CMAKE_BINARY_DIR}/sanitizer-env.sh
"# Generated by cmake/VortexSanitizers.cmake: the run-time environment of this
# instrumented build (source it: . ${CMAKE_BINARY_DIR}/sanitizer-env.sh).
export ASAN_OPTIONS='${VORTEX_ASAN_OPTIONS}'
export UBSAN_OPTIONS='${VORTEX_UBSAN_OPTIONS}'
export ASAN_SYMBOLIZER_PATH='${VORTEX_LLVM_SYMBOLIZER}'
# For an uninstrumented host that loads an instrumented library (mlir-opt
# with VortexPlugin.so): LD_PRELOAD=\"\$VORTEX_SANITIZER_PRELOAD\" mlir-opt ...
export VORTEX_SANITIZER_PRELOAD='${VORTEX_SANITIZER_PRELOAD}'
")
endif()

# The installed (and build-tree) vortex libraries hold instrumented code:
# whoever links them must link the sanitizer runtime too. Called at the end
# of the configuration, when every library exists.
function(vortex_export_sanitizer_link_options)
  if(NOT VORTEX_ENABLE_SANITIZERS)
    return()
  endif()
  get_property(_libs GLOBAL PROPERTY VORTEX_EXPORTED_LIBS)
  foreach(_lib IN LISTS _libs ITEMS VortexCAPI)
    if(TARGET ${_lib})
      target_link_options(${_lib} INTERFACE ${VORTEX_SANITIZER_LINK_FLAGS})
    endif()
  endforeach()
endfunction()
