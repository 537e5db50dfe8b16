# RUN: rm -rf %t && mkdir -p %t
# RUN: vortex-compile %examples/block_sparse_attention.mlir --target=cpu -o %t/cpu
# RUN: %python %s %t %vortex_src | FileCheck %s
# REQUIRES: torch
#
# A runtime-only install (issue 34): `VORTEX_RUNTIME_ONLY=1 pip install .`
# builds no C++ and needs no MLIR. Installed on its own (pip --target, run
# with `python -S` so that no other installed copy of vortex is seen), it
# imports, has the examples but no compiler (and says how to get one), and
# runs a flow compiled elsewhere (a CPU shared object and its manifest)
# through its torch ops.

import os
import subprocess
import sys
import sysconfig

out, src = sys.argv[1], sys.argv[2]
site = os.path.join(out, "site")
env = dict(os.environ, VORTEX_RUNTIME_ONLY="1")
subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                "--no-build-isolation", "--no-deps",
                "--disable-pip-version-check", "--target", site,
                "-C", "build-dir=" + os.path.join(out, "build"), src],
               check=True, env=env)
toolchain = os.path.join(site, "vortex", "_toolchain")
print("installed:", sorted(os.listdir(toolchain)),
      sorted(os.listdir(os.path.join(toolchain, "share", "vortex"))))
# CHECK: installed: ['share'] ['examples']

CHILD = r"""
import os, sys
import vortex, torch
from vortex import testing
from vortex.compiler.driver import find_tool
site, out = sys.argv[1], sys.argv[2]
print("vortex from the install:", vortex.__file__.startswith(site))
print("examples:", os.path.isfile(os.path.join(
    testing.EXAMPLES, "block_sparse_attention.mlir")))
try:
    find_tool("vortex-compile")
except vortex.VortexCompileError as err:
    print("no compiler:", err)
flow = vortex.load(os.path.join(out, "cpu",
                                "block_sparse_attention.manifest.json"))
torch.manual_seed(0)
cache = flow.allocate_cache(num_blocks=140)
cache["k"].normal_(); cache["v"].normal_()
indptr = torch.tensor([0, 100, 140], dtype=torch.int32)
indices = torch.randperm(140, dtype=torch.int32)
flow.cache_step(cache, indices)
ptr, idx = flow.indexer(torch.randn(2, 8, 128), cache, indptr, indices)
print("selected:", ptr.tolist())
"""
# Only the install and the packages torch and numpy come from: no .pth
# files (-S), so no editable install of vortex is seen; no tools on PATH.
path = [site, sysconfig.get_paths()["purelib"]]
proc = subprocess.run([sys.executable, "-S", "-c", CHILD, site, out],
                      env=dict(os.environ, PYTHONPATH=os.pathsep.join(path),
                               VORTEX_COMPILE="", PATH="/usr/bin:/bin"),
                      text=True,
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print(proc.stdout)
sys.exit(proc.returncode)
# CHECK: vortex from the install: True
# CHECK: examples: True
# CHECK: no compiler: vortex-compile not found (looked in {{.*}}site/vortex/_toolchain/bin/vortex-compile and PATH): pip install . in the Vortex checkout (scripts/setup.sh installs MLIR 22 first), or set VORTEX_COMPILE
# CHECK: selected: [0, 32, 64]
