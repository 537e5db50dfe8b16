# REQUIRES: ptxas, cuda-toolkit
# RUN: rm -rf %t && mkdir -p %t
# RUN: vortex-compile %S/../../Tools/vortex-compile/Inputs/toy-flow.mlir -o %t/one \
# RUN:   --cuda-path=%cuda_path
# RUN: vortex-compile %S/../../Tools/vortex-compile/Inputs/toy-flow.mlir -o %t/split \
# RUN:   --cuda-path=%cuda_path --kernel-cache=%t/cache
# RUN: %python %s %t
#
# How the GPU runtime loads a flow's modules, against a recording driver
# (no torch, no GPU): the flow's one cubin serves every kernel; per-kernel
# cubins (vortex-compile --kernel-cache, artifacts.cubins) are loaded one
# module each, every kernel's function taken from its own module; a missing
# or refused per-kernel cubin unloads the modules already loaded and falls
# back to the PTX, else fails naming both; prefer="ptx" loads the PTX
# first. Then the manifest's checks of artifacts.cubins.

import copy
import json
import os
import sys

from vortex.runtime import manifest as mf
from vortex.runtime import cuda as rt
from vortex import testing

report = testing.Tally()
tmp = sys.argv[1]


class Driver:
    """A recording driver (vortex.runtime.driver's interface): a module's
    handle is its load's number, and `refuse` fails the load of an image
    holding it."""

    def __init__(self, refuse=None):
        self.loads, self.unloads, self.refuse = [], [], refuse
        self.ptx_loads = 0

    def load_module(self, image, ptx, what):
        data = bytes(image[:16])
        self.ptx_loads += bool(ptx)
        if self.refuse is not None and self.refuse in data:
            raise rt.CudaDriverError(f"loading {what} failed: "
                                     "CUDA_ERROR_INVALID_IMAGE")
        self.loads.append(data)
        return 0x1000 + len(self.loads)

    def unload_module(self, mod):
        self.unloads.append(mod)


def flow_for(path, drv, prefer="cubin"):
    flow = object.__new__(rt.CompiledFlowGPU)
    flow.manifest = mf.Manifest.from_file(path)
    flow.flow = flow.manifest.flow
    flow._prefer = prefer
    flow._drv = drv
    return flow


KERNELS = ["toy_sparse_attention_indexer_w0", "toy_sparse_attention_cache_w0"]
one = os.path.join(tmp, "one", "toy_sparse_attention.manifest.json")
split = os.path.join(tmp, "split", "toy_sparse_attention.manifest.json")

drv = Driver()
by_kernel, where = flow_for(one, drv)._load_modules()
report(sorted(by_kernel) == sorted(KERNELS) and
       len(set(by_kernel.values())) == 1 and len(drv.loads) == 1 and
       where.endswith("toy_sparse_attention.cubin"),
       "one cubin: one module serves every kernel", (by_kernel, where))

drv = Driver()
by_kernel, where = flow_for(split, drv)._load_modules()
report(sorted(by_kernel) == sorted(KERNELS) and
       len(set(by_kernel.values())) == 2 and len(drv.loads) == 2 and
       all(d.startswith(b"\x7fELF") for d in drv.loads) and
       "per-kernel cubins" in where,
       "per-kernel cubins: a module per kernel, each an ELF image",
       (by_kernel, where))

# Each kernel's function comes from its own module.
flow = flow_for(split, drv)
flow._get_function = lambda module, spec: (spec.kernel, module)
functions = flow._functions(by_kernel)
report(sorted(functions) == sorted(KERNELS) and
       all(functions[k] == (k, by_kernel[k]) for k in KERNELS),
       "functions are looked up in their own module", functions)

# A refused per-kernel cubin: the ones loaded before it are unloaded, and
# the PTX is loaded instead.
refusing = os.path.join(tmp, "refusing")
os.makedirs(refusing)
order = flow_for(split, Driver())._kernel_names()
for name in os.listdir(os.path.join(tmp, "split")):
    with open(os.path.join(tmp, "split", name), "rb") as src, \
            open(os.path.join(refusing, name), "wb") as dst:
        dst.write(b"\x7fELF-REFUSED...." if name == order[1] + ".cubin"
                  else src.read())
drv = Driver(refuse=b"REFUSED")
flow = flow_for(os.path.join(refusing, "toy_sparse_attention.manifest.json"),
                drv)
by_kernel, where = flow._load_modules()
report(drv.ptx_loads == 1 and where.endswith(".ptx") and
       len(set(by_kernel.values())) == 1 and drv.unloads == [0x1001] and
       drv.loads[0].startswith(b"\x7fELF"),
       "a refused per-kernel cubin (the second loaded): the first one "
       "unloaded, the PTX loaded instead", (drv.unloads, where))

# A missing per-kernel cubin and no PTX: the error names both.
broken = os.path.join(tmp, "broken")
os.makedirs(broken)
data = json.load(open(split))
for name in data["artifacts"]["cubins"].values():
    with open(os.path.join(tmp, "split", name), "rb") as src, \
            open(os.path.join(broken, name), "wb") as dst:
        dst.write(src.read())
os.remove(os.path.join(broken, data["artifacts"]["cubins"][KERNELS[0]]))
del data["artifacts"]["ptx"]
with open(os.path.join(broken, "toy_sparse_attention.manifest.json"), "w") as f:
    json.dump(data, f)
drv = Driver()
try:
    flow_for(os.path.join(broken, "toy_sparse_attention.manifest.json"),
             drv)._load_modules()
    report(False, "a missing per-kernel cubin without PTX raises")
except rt.CudaDriverError as e:
    report("could not load a module" in str(e) and "cubins:" in str(e) and
           KERNELS[0] + ".cubin" in str(e) and drv.loads == drv.loads[:1] and
           len(drv.unloads) == len(drv.loads),
           "a missing per-kernel cubin without PTX: an error naming it, "
           "nothing left loaded", (str(e), drv.loads, drv.unloads))

# prefer="ptx" loads the PTX though per-kernel cubins exist.
drv = Driver()
by_kernel, where = flow_for(split, drv, prefer="ptx")._load_modules()
report(drv.ptx_loads == 1 and where.endswith(".ptx") and
       len(set(by_kernel.values())) == 1, "prefer=ptx loads the PTX first",
       where)

# The manifest's checks of artifacts.cubins name what is wrong.
base = json.load(open(split))


def refused(mutate, needle, what):
    d = copy.deepcopy(base)
    mutate(d)
    try:
        mf.Manifest(d, tmp)
        report(False, what + ": refused")
    except ValueError as e:
        report(needle in str(e) and "artifacts.cubins" in str(e),
               what + ": refused, naming artifacts.cubins", str(e))


refused(lambda d: d["artifacts"].__setitem__("cubins", ["a.cubin"]),
        "kernel -> file name", "a list")
refused(lambda d: d["artifacts"]["cubins"].__setitem__(KERNELS[0],
                                                       "../x.cubin"),
        "is not a file name", "a path outside the manifest's directory")
refused(lambda d: d["artifacts"]["cubins"].__setitem__(KERNELS[0], ""),
        "is not a file name", "an empty name")
refused(lambda d: d["artifacts"]["cubins"].pop(KERNELS[1]),
        "has no cubin for the kernels " + KERNELS[1], "a kernel left out")
m = mf.Manifest(base, os.path.join(tmp, "split"))
report(m.artifacts == {"ptx": "toy_sparse_attention.ptx"} and
       m.kernel_cubin(KERNELS[0]) == os.path.join(tmp, "split",
                                                  KERNELS[0] + ".cubin"),
       "artifacts keeps the plain files; kernel_cubin gives each path",
       (m.artifacts, m.kernel_cubin(KERNELS[0])))

report("torch" not in sys.modules, "no torch import")
report.exit(summary=True)
