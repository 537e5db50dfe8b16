# RUN: %python %s
# REQUIRES: numpy
#
# Slotted fields on the CPU (docs/contract.md, "Slotted fields"): the cache
# step takes slot_of_ptr, the slot of every pool block; a slotted field has
# num_slots rows and block b's summary goes to row slot_of_ptr[b]; a block
# whose slot is < 0 writes nothing, in any field (vortex_torch's cache
# program returns on a miss). Checked against numpy (float64, rtol = atol =
# 1e-6) with a non-identity map, misses, fewer slots than blocks, and the
# untouched rows; then the manifest's shapes and the refusals (no map, a map
# for a flow without slotted fields, a wrong shape, a slot out of range),
# each a ValueError naming slot_of_ptr with nothing written. With torch, the
# same through the cache torch op (vortex.load, flow.cache_step(...,
# slot_of_ptr=...)), against the same numpy result, and its refusals.

import os
import sys

import numpy as np

import vortex

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "Inputs", "slotted_flow.mlir")) as f:
    FLOW = f.read()

failures = 0


def check(ok, what, detail=""):
    global failures
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else f": {detail}"))
    failures += 0 if ok else 1


flow = vortex.compile_flow(FLOW)
m = flow.manifest
check(m.tensors["stage"].format_shape() == "[num_slots, 1, 8]" and
      m.tensors["slot_of_ptr"].format_shape() == "[num_blocks]" and
      m.steps["cache"].args[-1] == "slot_of_ptr" and
      m.symbols.get("num_slots") == "stage",
      "manifest: slotted fields [num_slots, r, c], slot_of_ptr [num_blocks] "
      "last in the cache step", str(m.steps["cache"].args))

rng = np.random.default_rng(0)
NB, NS = 12, 5
k = rng.standard_normal((NB, 4, 8)).astype(np.float32)
v = rng.standard_normal((NB, 4, 8)).astype(np.float32)
POISON = -7.0


def fresh():
    return {"k": k.copy(), "v": v.copy(),
            "c": np.full((NB, 1, 8), POISON, np.float32),
            "stage": np.full((NS, 1, 8), POISON, np.float32),
            "stamp": np.full((NS, 1, 1), POISON, np.float32)}


slot_of_ptr = np.full(NB, -1, np.int32)
slot_of_ptr[[1, 3, 4, 8, 10]] = [4, 0, 2, 1, -1]
slot_of_ptr[11] = 3
block_ids = np.array([3, 1, 7, 4, 10, 8, 0], np.int32)  # 7, 10, 0: misses

cache = fresh()
flow.cache_step(cache, block_ids, slot_of_ptr)
want = fresh()
for b in block_ids:
    s = slot_of_ptr[b]
    if s < 0:
        continue
    want["c"][b, 0] = k[b].astype(np.float64).mean(0)
    want["stage"][s, 0] = v[b].astype(np.float64).max(0)
    want["stamp"][s, 0, 0] = 1.0
for name in ("c", "stage", "stamp"):
    check(np.allclose(cache[name], want[name], rtol=1e-6, atol=1e-6),
          f"cache step: {name} (slot map, misses, untouched rows)",
          f"got {cache[name].reshape(cache[name].shape[0], -1)[:, :3]}")

# The indexer step takes the slotted fields (never read) with the rest.
q = rng.standard_normal((2, 2, 8)).astype(np.float32)
indptr = np.array([0, 3, 6], np.int32)
indices = np.array([3, 1, 4, 8, 2, 5], np.int32)
cache["c"][np.isin(np.arange(NB), [2, 5])] = 0.5
sp, si = flow.indexer(q, cache, indptr, indices)
check(sp.tolist() == [0, 2, 4], "indexer step runs with slotted fields "
      "present", f"{sp.tolist()}")

for what, call in [
        ("no map for a flow with slotted fields",
         lambda c: flow.cache_step(c, block_ids)),
        ("a map of the wrong shape",
         lambda c: flow.cache_step(c, block_ids, slot_of_ptr[:5])),
        ("a slot past num_slots",
         lambda c: flow.cache_step(c, block_ids,
                                   np.where(slot_of_ptr == 2, NS,
                                            slot_of_ptr)))]:
    c = fresh()
    try:
        call(c)
        check(False, f"refused: {what}", "no error")
    except ValueError as err:
        untouched = all((c[n] == POISON).all() for n in ("c", "stage", "stamp"))
        check("slot_of_ptr" in str(err) and untouched,
              f"refused: {what} ({err})", str(err))

plain = vortex.compile_flow(os.path.join(HERE, "..", "..", "..", "examples",
                                         "block_sparse_attention.mlir"))
c = {n: np.zeros(shape, np.float32)
     for n, (shape, _) in plain.manifest.cache_shapes(NB).items()}
try:
    plain.cache_step(c, block_ids, slot_of_ptr)
    check(False, "refused: a map for a flow without slotted fields")
except ValueError as err:
    check("slot_of_ptr" in str(err) and not c["centroids"].any(),
          f"refused: a map for a flow without slotted fields ({err})")

try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    tflow = vortex.load(vortex.compile(FLOW, target="cpu"))
    tcache = {n: torch.from_numpy(a) for n, a in fresh().items()}
    tflow.cache_step(tcache, torch.from_numpy(block_ids),
                     slot_of_ptr=torch.from_numpy(slot_of_ptr))
    check(all(np.allclose(tcache[n].numpy(), want[n], rtol=1e-6, atol=1e-6)
              for n in ("c", "stage", "stamp")),
          "torch op: cache step with slot_of_ptr (against numpy)")
    for what, kwargs in [
            ("no map", {}),
            ("a slot past num_slots",
             {"slot_of_ptr": torch.from_numpy(
                 np.where(slot_of_ptr == 2, NS, slot_of_ptr).astype(np.int32))})]:
        tcache = {n: torch.from_numpy(a) for n, a in fresh().items()}
        try:
            tflow.cache_step(tcache, torch.from_numpy(block_ids), **kwargs)
            check(False, f"torch op refused: {what}", "no error")
        except ValueError as err:
            untouched = all(bool((tcache[n] == POISON).all())
                            for n in ("c", "stage", "stamp"))
            check("slot_of_ptr" in str(err) and untouched,
                  f"torch op refused: {what} ({err})", str(err))

sys.exit(1 if failures else 0)
