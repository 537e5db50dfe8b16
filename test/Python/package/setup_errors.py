# RUN: rm -rf %t && mkdir -p %t
# RUN: vortex-compile %examples/block_sparse_attention.mlir --target=sm_90 --no-cubin -o %t/gpu
# RUN: %python %s %t
# REQUIRES: torch-cpu-only
#
# Bad setup, as a Python user meets it (issue 34): each case is one line
# that names what is missing and the command that fixes it, and the
# commands exit non-zero. Run in subprocesses, torch hidden where needed
# (sys.modules["torch"] = None makes `import torch` fail as it does on a
# machine without it).
#   - torch missing: vortex.load, vortex.semantics.eager, python -m vortex.runtime.native;
#   - a CPU-only torch asked to run a CUDA flow: vortex.load;
#   - the native launcher failing to build (a CUDA toolkit that is not
#     there): python -m vortex.runtime.native;
#   - vortex-compile missing: python -m vortex compile.
# MLIR and CUDA missing are in test/Scripts/setup-errors.test.

import os
import subprocess
import sys

from vortex import testing

report = testing.Tally()
out = sys.argv[1]
gpu_manifest = os.path.join(out, "gpu", "block_sparse_attention.manifest.json")
HIDE_TORCH = "import sys; sys.modules['torch'] = None; "


def run(code, env=None):
    proc = subprocess.run([sys.executable, "-c", code], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=dict(os.environ, **(env or {})))
    return proc.returncode, proc.stdout.strip(), proc.stderr.strip()


def one_line(what, rc, err, must):
    lines = err.splitlines()
    report(rc != 0 and len(lines) == 1 and all(m in err for m in must),
           what, f"exit {rc}, stderr:\n{err}")


def raised(what, code, error, must, env=None):
    """`code` raises `error` whose message is one line holding `must`."""
    rc, stdout, err = run(
        f"import sys\ntry:\n    exec({code!r})\nexcept {error} as e:\n"
        "    print(e)\n    sys.exit(0)\nsys.exit('no error')\n", env)
    ok = rc == 0 and len(stdout.splitlines()) == 1 and all(
        m in stdout for m in must)
    report(ok, what, f"exit {rc}: {stdout or err}")


# torch missing.
raised("vortex.load without torch: TorchMissingError",
       HIDE_TORCH + f"import vortex; vortex.load({gpu_manifest!r})",
       "__import__('vortex.environment').environment.TorchMissingError",
       ["torch is not installed", "pip install torch==2.13.0"])
raised("vortex.semantics.eager without torch: an ImportError that says the fix",
       HIDE_TORCH + "from vortex.semantics import eager", "ImportError",
       ["torch is not installed", "pip install torch==2.13.0"])
rc, _, err = run(HIDE_TORCH + "import runpy; sys.argv = ['vortex.runtime.native']; "
                 "runpy.run_module('vortex.runtime.native', run_name='__main__')")
one_line("python -m vortex.runtime.native without torch", rc, err,
         ["vortex.runtime.native: unavailable: torch is not installed",
          "pip install torch (a CUDA build)"])

# A CPU-only torch asked to run a CUDA flow.
raised("vortex.load of a CUDA flow on a CPU-only torch",
       f"import vortex; vortex.load({gpu_manifest!r})",
       "__import__('vortex.environment').environment.SetupError",
       ["block_sparse_attention runs on CUDA", "is a CPU-only build",
        "pip install torch (a CUDA build)", "target='cpu'"])
rc, _, err = run("import runpy, sys; sys.argv = ['vortex.runtime.native']; "
                 "runpy.run_module('vortex.runtime.native', run_name='__main__')")
one_line("python -m vortex.runtime.native on a CPU-only torch", rc, err,
         ["is a CPU-only build: pip install torch (a CUDA build)"])

# The native launcher failing to build: torch taken for a CUDA build whose
# toolkit is not there.
rc, _, err = run(
    "import runpy, sys, torch; torch.version.cuda = '13.0'; "
    "sys.argv = ['vortex.runtime.native']; "
    "runpy.run_module('vortex.runtime.native', run_name='__main__')",
    {"CUDA_HOME": os.path.join(out, "no-cuda"),
     "VORTEX_NATIVE_DIR": os.path.join(out, "native")})
one_line("python -m vortex.runtime.native when the build fails", rc, err,
         ["building launcher.cpp failed (",
          "install the CUDA toolkit (nvcc) and ninja, then "
          "scripts/build-native.sh -v shows the compiler's output"])

# vortex-compile missing (an override that points nowhere).
proc = subprocess.run(
    [sys.executable, "-m", "vortex", "compile",
     os.path.join(testing.EXAMPLES, "block_sparse_attention.mlir"),
     "-o", os.path.join(out, "none")], text=True, stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    env=dict(os.environ, VORTEX_COMPILE=os.path.join(out, "no-tool")))
one_line("python -m vortex compile without vortex-compile", proc.returncode,
         proc.stderr, ["error: VORTEX_COMPILE=", "is not an executable",
                       "unset VORTEX_COMPILE"])
report(not os.path.exists(os.path.join(out, "none")),
       "nothing written when the tool is missing")
report.exit()
