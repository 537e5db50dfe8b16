"""Slotted fields on the GPU (docs/contract.md, "Slotted fields"), for the
H100 logs:

    python3 test/Python/Inputs/slotted_gpu_check.py \
        .device-artifacts/slotted/slotted_flow.manifest.json

The flow is test/Python/Inputs/slotted_flow.mlir compiled for the GPU. The
cache step runs through the cache torch op (`flow.cache_step(...,
slot_of_ptr=...)`) on 6000 pool blocks and 1500 slots: a random slot map
(a permutation into the slots for 1400 blocks, -1 for the rest), 4000
completed blocks in random order with negative ids mixed in. Checked
against numpy (float64, rtol = atol = 1e-5): the paged field c at every
block with a slot, the slotted fields stage and stamp at every slot, and
every other row still poisoned (a block without a slot writes nothing).
Then a slot past num_slots: the guard reports slot_of_ptr (flow.check()
raises) and that block writes nothing; the other blocks are written.
"""

import sys

import numpy as np
import torch

import vortex

POISON = -7.0


def reference(k, v, block_ids, slot_of_ptr, nb, ns):
    want = {"c": np.full((nb, 1, 8), POISON), "stage": np.full((ns, 1, 8),
                                                                 POISON),
            "stamp": np.full((ns, 1, 1), POISON)}
    for b in block_ids:
        if b < 0 or slot_of_ptr[b] < 0 or slot_of_ptr[b] >= ns:
            continue
        s = slot_of_ptr[b]
        want["c"][b, 0] = k[b].astype(np.float64).mean(0)
        want["stage"][s, 0] = v[b].astype(np.float64).max(0)
        want["stamp"][s, 0, 0] = 1.0
    return want


def run(flow, k, v, block_ids, slot_of_ptr, nb, ns):
    dev = torch.device("cuda")
    cache = {"k": torch.from_numpy(k).to(dev), "v": torch.from_numpy(v).to(dev),
             "c": torch.full((nb, 1, 8), POISON, device=dev),
             "stage": torch.full((ns, 1, 8), POISON, device=dev),
             "stamp": torch.full((ns, 1, 1), POISON, device=dev)}
    flow.cache_step(cache, torch.from_numpy(block_ids).to(dev),
                    slot_of_ptr=torch.from_numpy(slot_of_ptr).to(dev))
    torch.cuda.synchronize()
    return {n: cache[n].cpu().numpy() for n in ("c", "stage", "stamp")}


def main() -> int:
    flow = vortex.load(sys.argv[1], 0)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    rng = np.random.default_rng(0)
    nb, ns = 6000, 1500
    k = rng.standard_normal((nb, 4, 8)).astype(np.float32)
    v = rng.standard_normal((nb, 4, 8)).astype(np.float32)
    slot_of_ptr = np.full(nb, -1, np.int32)
    owners = rng.permutation(nb)[:1400]
    slot_of_ptr[owners] = rng.permutation(ns)[:1400]
    block_ids = rng.permutation(nb)[:4000].astype(np.int32)
    block_ids[rng.integers(0, 4000, 50)] = -1
    failures = 0

    got = run(flow, k, v, block_ids, slot_of_ptr, nb, ns)
    flow.check()
    want = reference(k, v, block_ids, slot_of_ptr, nb, ns)
    live = int(sum(1 for b in block_ids if b >= 0 and slot_of_ptr[b] >= 0))
    for n in ("c", "stage", "stamp"):
        ok = np.allclose(got[n], want[n], rtol=1e-5, atol=1e-5)
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {n}: {got[n].shape[0]} rows, "
              f"{live} blocks with a slot written, the rest untouched")

    bad = slot_of_ptr.copy()
    victim = int(next(b for b in block_ids if b >= 0 and bad[b] >= 0))
    bad[victim] = ns + 3
    got = run(flow, k, v, block_ids, bad, nb, ns)
    try:
        flow.check()
        raised = ""
    except vortex.FlowCheckError as err:
        raised = str(err)
    want = reference(k, v, block_ids, bad, nb, ns)
    ok = ("slot_of_ptr" in raised and
          all(np.allclose(got[n], want[n], rtol=1e-5, atol=1e-5)
              for n in ("c", "stage", "stamp")) and
          (got["c"][victim] == POISON).all())
    failures += not ok
    print(f"{'PASS' if ok else 'FAIL'} a slot past num_slots: guard "
          f"{raised.splitlines()[0] if raised else 'not raised'}; block "
          f"{victim} wrote nothing, the others were written")
    print(f"{3 + 1 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
