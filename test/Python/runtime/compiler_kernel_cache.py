# REQUIRES: ptxas, cuda-toolkit
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %S/../../Tools/vortex-compile/Inputs/toy-flow.mlir
#
# vortex.compile and the kernel cache: a GPU compile goes through
# kernel_cache_dir() ($VORTEX_KERNEL_CACHE_DIR) trimmed to
# kernel_cache_limit() ($VORTEX_KERNEL_CACHE_LIMIT, default 1G); options
# that name a --kernel-cache or a --kernel-cache-limit win; the limit is not
# part of the flow's key; a bad limit is a VortexCompileError naming it.
# vortex-compile reads the prebuilt kernels ($VORTEX_PREBUILT_KERNELS, else
# the build's share/vortex/kernels) through that cache, so vortex.compile
# does: entries tampered with in a prebuilt directory reach its output.

import json
import os
import sys

from vortex.compiler import driver as compiler
from vortex import testing

report = testing.Tally()
tmp, toy = sys.argv[1], sys.argv[2]
os.environ["VORTEX_CACHE_DIR"] = os.path.join(tmp, "flows")
os.environ["VORTEX_KERNEL_CACHE_DIR"] = kc = os.path.join(tmp, "kc")
os.environ.pop("VORTEX_KERNEL_CACHE_LIMIT", None)


def entries(directory):
    return sorted(n for n in os.listdir(directory)
                  if n.endswith((".ptx", ".cubin"))) if os.path.isdir(
                      directory) else []


report(compiler.kernel_cache_limit() == "1G", "the default limit is 1G",
       compiler.kernel_cache_limit())
first = compiler.compile(toy, target="sm_90")
with open(first) as f:
    cubins = json.load(f)["artifacts"].get("cubins", {})
report(len(cubins) == 2 and len(entries(kc)) == 4,
       "a GPU compile uses the kernel cache: a cubin per kernel, 4 entries",
       (cubins, entries(kc)))

# A limit of 0 keeps nothing, and is not part of the flow's key: the same
# flow comes back from the flow cache, uncompiled.
os.environ["VORTEX_KERNEL_CACHE_LIMIT"] = "0"
again = compiler.compile(toy, target="sm_90")
report(again == first and len(entries(kc)) == 4,
       "the limit is not part of the flow's key", (again, first))
fresh = compiler.compile(toy, target="sm_90",
                         out_dir=os.path.join(tmp, "fresh"))
report(os.path.isfile(fresh) and entries(kc) == [],
       "VORTEX_KERNEL_CACHE_LIMIT=0 empties the cache after the compile",
       entries(kc))

# Options win over the environment.
explicit = compiler.compile(toy, target="sm_90",
                            out_dir=os.path.join(tmp, "explicit"),
                            options=["--kernel-cache-limit=1M"])
report(len(entries(kc)) == 4, "--kernel-cache-limit in options wins",
       entries(kc))
other = os.path.join(tmp, "other-kc")
compiler.compile(toy, target="sm_90", out_dir=os.path.join(tmp, "other"),
                 options=[f"--kernel-cache={other}"])
report(len(entries(other)) == 4 and len(entries(kc)) == 4,
       "a --kernel-cache in options replaces the default directory, and "
       "gets no default limit", (entries(other), entries(kc)))

os.environ["VORTEX_KERNEL_CACHE_LIMIT"] = "lots"
try:
    compiler.compile(toy, target="sm_90", out_dir=os.path.join(tmp, "bad"))
    report(False, "a bad limit is refused")
except compiler.VortexCompileError as e:
    report("--kernel-cache-limit: 'lots' is not a size" in str(e) and
           not os.path.exists(os.path.join(tmp, "bad")),
           "a bad limit is refused by name, nothing written", e)


# The prebuilt kernels: a directory of the toy's entries, tampered with.
os.environ.pop("VORTEX_KERNEL_CACHE_LIMIT", None)
prebuilt = os.path.join(tmp, "prebuilt")
compiler.compile(toy, target="sm_90", out_dir=os.path.join(tmp, "seed"),
                 options=[f"--kernel-cache={prebuilt}",
                          "--prebuilt-kernels=none"])
for name in entries(prebuilt):
    if name.endswith(".ptx"):
        with open(os.path.join(prebuilt, name), "a") as f:
            f.write("// from the prebuilt kernels\n")
os.environ["VORTEX_KERNEL_CACHE_DIR"] = kc2 = os.path.join(tmp, "kc2")
os.environ["VORTEX_PREBUILT_KERNELS"] = prebuilt
served = compiler.compile(toy, target="sm_90",
                          out_dir=os.path.join(tmp, "served"))
with open(os.path.join(tmp, "served", "toy_sparse_attention.ptx")) as f:
    marks = f.read().count("// from the prebuilt kernels")
report(os.path.isfile(served) and marks == 2 and len(entries(kc2)) == 4,
       "vortex.compile reads $VORTEX_PREBUILT_KERNELS through its kernel "
       "cache: both kernels served, copied into the cache",
       (marks, entries(kc2)))
os.environ["VORTEX_PREBUILT_KERNELS"] = ""

report.exit(summary=True)
