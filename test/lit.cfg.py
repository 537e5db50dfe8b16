# -*- Python -*-
# lit configuration of the vortex test suite (`check-vortex`).

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "VORTEX"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".c", ".py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.vortex_obj_root, "test")
config.excludes = ["Inputs", "CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py", "external"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%vortex_src", config.vortex_src_root))
config.substitutions.append(("%vortex_obj", config.vortex_obj_root))
config.substitutions.append(("%vortex_libs", config.vortex_libs_dir))
config.substitutions.append(("%examples",
                             os.path.join(config.vortex_src_root, "examples")))
# Longer names first: lit substitutes in order, and %cmake prefixes the others.
config.substitutions.append(("%cmake_generator", config.cmake_generator))
config.substitutions.append(("%cmake_make_program", config.cmake_make_program))
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%cxx", config.cxx_compiler))
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%mlir_dir", config.mlir_dir))
config.substitutions.append(("%python", config.python_executable or "python3"))

llvm_config.use_default_substitutions()
llvm_config.with_system_environment(["HOME", "TMPDIR", "CUDA_HOME", "CUDA_ROOT"])
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
# vortex.compile keeps GPU kernels in a kernel cache (docs/gpu.md): the
# suite's own, not the user's.
config.environment["VORTEX_KERNEL_CACHE_DIR"] = os.path.join(
    config.vortex_obj_root, "test", "kernel-cache")
# Nor the build's prebuilt kernels (share/vortex/kernels, which
# vortex-compile --kernel-cache reads by default): tests that want them name
# a directory (Tools/vortex-compile/prebuilt-kernels.test).
config.environment["VORTEX_PREBUILT_KERNELS"] = ""

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.vortex_tools_dir, append_path=True)
# The Python tests import the installed package (pip install -e .), and its
# compiles run this build's tools (the environment variables are the
# package's overrides).
config.environment["VORTEX_COMPILE"] = os.path.join(config.vortex_tools_dir,
                                                    "vortex-compile")
config.environment["VORTEX_OPT"] = os.path.join(config.vortex_tools_dir,
                                                "vortex-opt")

tool_dirs = [config.vortex_tools_dir, config.llvm_tools_dir]
tools = ["vortex-opt", "vortex-compile", "vortex-capi-test",
         "vortex-capi-test-mlir-first", "vortex-fuzz"]

# An ASan/UBSan build (scripts/test-sanitizers.sh, docs/fuzzing.md): the
# run-time options that instrumented vortex code next to Debian's
# uninstrumented libMLIR.so needs (cmake/VortexSanitizers.cmake says why),
# ahead of any the caller set; and stock mlir-opt, which loads the
# instrumented VortexPlugin.so, runs with the sanitizer runtime preloaded.
if getattr(config, "vortex_sanitizers", 0):
    config.available_features.add("sanitizers")
    for _var, _opts in (("ASAN_OPTIONS", config.vortex_asan_options),
                        ("UBSAN_OPTIONS", config.vortex_ubsan_options)):
        _user = os.environ.get(_var)
        config.environment[_var] = _opts + (":" + _user if _user else "")
    if config.llvm_symbolizer:
        config.environment["ASAN_SYMBOLIZER_PATH"] = config.llvm_symbolizer
    _mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
    if config.vortex_sanitizer_preload:
        config.available_features.add("sanitizer-preload")
        tools.append(ToolSubst(
            "mlir-opt",
            command="env LD_PRELOAD=%s %s" % (config.vortex_sanitizer_preload,
                                              _mlir_opt)))
    else:
        tools.append("mlir-opt")
else:
    tools.append("mlir-opt")
if getattr(config, "vortex_fuzzer", 0):
    config.available_features.add("libfuzzer")
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Optional capabilities.
_ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.path.exists(_ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
# A CUDA toolkit with libdevice, found as vortex-to-nvvm finds it.
for _cuda in [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_ROOT",
                                          "CUDA_PATH")] + ["/usr/local/cuda"]:
    if _cuda and os.path.exists(
            os.path.join(_cuda, "nvvm", "libdevice", "libdevice.10.bc")):
        config.available_features.add("cuda-toolkit")
        config.substitutions.append(("%cuda_path", _cuda))
        break
# numpy, torch and transformers as %python sees them (lit itself may run under another
# Python).
_python = config.python_executable or shutil.which("python3")
for _module in ("numpy", "torch", "transformers", "gguf"):
    if _python and subprocess.run([_python, "-c", f"import {_module}"],
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode == 0:
        config.available_features.add(_module)
# SmolLM2-135M's GGUF (scripts/fetch-smollm2.sh, which setup.sh runs).
_models = os.environ.get("VORTEX_MODEL_DIR") or os.path.join(
    os.path.expanduser("~"), ".cache", "vortex", "models")
_smollm2 = os.path.join(_models, "smollm2-135m")
if "gguf" in config.available_features and os.path.isfile(
        os.path.join(_smollm2, "SmolLM2-135M-Instruct.Q4_1.gguf")):
    config.available_features.add("smollm2")
    config.substitutions.append(("%smollm2", _smollm2))
# A CPU-only torch (the CI's): the refusal of a CUDA flow is tested there.
if _python and "torch" in config.available_features and subprocess.run(
        [_python, "-c", "import sys, torch; sys.exit(torch.version.cuda is not None)"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("torch-cpu-only")
# The package the Python tests import must be this checkout's: a suite that
# tested another copy would pass or fail for the wrong code.
if _python and "numpy" in config.available_features:
    _want = os.path.join(config.vortex_src_root, "python", "vortex")
    _found = subprocess.run(
        [_python, "-c", "import os, vortex; "
         "print(os.path.dirname(os.path.realpath(vortex.__file__)))"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    _got = _found.stdout.strip() if _found.returncode == 0 else None
    if _got != os.path.realpath(_want):
        lit_config.fatal(
            "%s imports the vortex package from %s, not from this checkout: "
            "pip install --no-build-isolation -e %s"
            % (_python, _got or "nowhere (it is not installed)",
               config.vortex_src_root))
