#===- PrebuildKernels.cmake - Fill share/vortex/kernels (cmake -P) --------===#
#
#   cmake -DCOMPILER=vortex-compile -DSEEDS="topk-seed.mlir;..." -DDIR=<dir>
#         -DCHIPS="sm_80;sm_90" -P PrebuildKernels.cmake
#
# Compiles each seed flow for each chip into a fresh kernel cache and puts it
# in place of DIR whole (a half-built directory is never left at DIR).
# Without ptxas the entries are PTX only (LLVM's part of the compile); a
# chip that fails to compile is warned about and skipped, as the entries
# only save time.
#
#===----------------------------------------------------------------------===#

set(tmp "${DIR}.tmp")
file(REMOVE_RECURSE "${tmp}" "${DIR}")
find_program(PTXAS ptxas HINTS "$ENV{CUDA_HOME}/bin" "$ENV{CUDA_ROOT}/bin"
  "$ENV{CUDA_PATH}/bin" /usr/local/cuda/bin NO_CACHE)
set(no_cubin "")
if(NOT PTXAS)
  set(no_cubin "--no-cubin")
  message(STATUS "prebuilt kernels: no ptxas, PTX only")
endif()
foreach(chip IN LISTS CHIPS)
  foreach(seed IN LISTS SEEDS)
    execute_process(
      COMMAND "${COMPILER}" "${seed}" "--target=${chip}" "-o" "${tmp}/out"
              "--kernel-cache=${tmp}/kernels" "--prebuilt-kernels=none"
              ${no_cubin}
      RESULT_VARIABLE rc)
    # Not fatal: without an entry a compile makes the kernel itself.
    if(NOT rc EQUAL 0)
      message(WARNING "prebuilt kernels: vortex-compile ${seed} --target=${chip} failed (${rc}); none from it for ${chip}")
    endif()
  endforeach()
endforeach()
if(EXISTS "${tmp}/kernels")
  file(RENAME "${tmp}/kernels" "${DIR}")
endif()
file(REMOVE_RECURSE "${tmp}")
