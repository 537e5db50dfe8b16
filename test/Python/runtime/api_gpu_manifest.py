# RUN: %python %s %examples
# REQUIRES: numpy, cuda-toolkit
#
# The GPU build of a source (PTX only; needs the CUDA toolkit's libdevice)
# against its CPU build: a version-2 manifest for backend cuda and its
# target, PTX and no cubin, the same op names and schemas as the CPU build,
# and host grids on the CPU manifest only. api.py covers the CPU API.

import os
import sys

import vortex
from vortex import testing
from vortex.runtime.manifest import Manifest

tally = testing.Tally()
src = os.path.join(sys.argv[1], "running_avg_block_sparse.mlir")
m = Manifest.from_file(vortex.compile(src))
gm = Manifest.from_file(vortex.compile(src, target="sm_90",
                                       options=["--no-cubin"]))
tally(gm.data["version"] == 2 and gm.backend == "cuda" and
      gm.target == "sm_90" and "ptx" in gm.artifacts and
      "cubin" not in gm.artifacts and os.path.isfile(gm.artifact("ptx")),
      "GPU manifest: version 2, backend cuda, target, PTX only",
      repr((gm.backend, gm.target, gm.artifacts)))
tally(gm.source_hash == m.source_hash and
      all(gm.op_name(s) == m.op_name(s) and gm.schema(s) == m.schema(s)
          for s in ("indexer", "cache")),
      "the CPU and the GPU build of one source share op names and schemas",
      repr((gm.op_name("indexer"), m.op_name("indexer"))))
tally(all(k.grid["kind"] != "host" for s in gm.steps.values()
          for k in s.kernels) and
      all(k.grid["kind"] == "host" for s in m.steps.values()
          for k in s.kernels),
      "host grids on the CPU manifest only")
tally.exit(summary=True)
