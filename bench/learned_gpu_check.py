"""GPU check of the learned ops and per-layer parameters (a check, not a
benchmark; it lives beside the other device checks that need artifacts
built on a machine with MLIR).

  # here (MLIR): trace and compile the two flows for a chip
  python3 bench/learned_gpu_check.py --build .device-artifacts/learned
  # on the GPU machine (torch, CUDA, no MLIR)
  python3 bench/learned_gpu_check.py --run .device-artifacts/learned

The flows and the float64 numpy model are test/Python/Inputs/learned_model.py
(the same as the CPU tests, test/Python/cpu/learned_layers.py): FactorScore
with a per-layer Wq behind the lookup [2, 0, 1, 1], and LearnedQuery with
Wq = Wk = None times a per-layer u. One compiled flow is loaded once with
all layers bound; each call's `layer=` selects the weights. Per layer, on
the GPU: the saved score equals the model's to rtol 1e-4 (f32 flow, float64
model), the selection equals the model's exactly (random data, no near
ties), and a layer outside the lookup is refused with nothing written.
Exit 0 when every check passes, 1 otherwise, 2 when nothing was checked.
"""

import argparse
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "Python", "Inputs"))
import learned_model as lm  # noqa: E402

import vortex  # noqa: E402


def flows():
    """The two flows with fixed weights (seeded: build and run agree)."""
    g = torch.Generator().manual_seed(5)
    Wq = torch.randn(lm.L, lm.H, lm.D, lm.R, generator=g)
    u = torch.randn(lm.L, 1, lm.D, generator=g)
    return {
        "factor_score": (lm.FactorScoreFlow(Wq), lambda q, k, ip, ids, layer:
                         lm.fs_scores(q, k, Wq, ip, ids, layer)),
        "learned_query": (lm.LearnedQueryFlow(None, None, u, identity=True),
                          lambda q, k, ip, ids, layer: lm.lq_scores(
                              q, k, None, None, u, ip, ids, layer,
                              identity=True)),
    }


def build(out, chip):
    for name, (flow, _) in flows().items():
        path = vortex.compile(flow, lm.CONFIG, target=chip, name=name,
                              out_dir=out)
        print(f"built {name}: {path}")
    return 0


def run(out):
    # A CPU build (--chip cpu) runs here too: the same checks, no GPU.
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    q, k, indptr, ids = lm.problem(2, lengths=(0, 2, 5, 7, 12, 30, 64, 3))
    tq, tk = torch.from_numpy(q).to(dev), torch.from_numpy(k).to(dev)
    tip, tids = torch.from_numpy(indptr).to(dev), torch.from_numpy(ids).to(dev)
    saved = lm.saved_positions(indptr)
    passed = failed = 0

    def report(ok, what, detail=""):
        nonlocal passed, failed
        passed += bool(ok)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'}: {what} {detail}")

    for name, (flow, model) in flows().items():
        path = os.path.join(out, f"{name}.manifest.json")
        compiled = vortex.load(path, device=0 if cuda else None,
                               params=flow.parameters())
        cache = compiled.allocate_cache(k.shape[0])
        for layer in range(len(lm.LOOKUP)):
            cache["k"].copy_(tk)
            compiled.cache_step(cache, tids, layer=layer)
            sp, si = compiled.indexer(tq, cache, tip, tids, layer=layer)
            sync()
            score = cache["probe"][tids[saved].long(), 0, 0].double().cpu()
            want = model(q, k, indptr, ids, layer)
            want_ip, want_ix = lm.select(want, indptr, ids)
            sp, si = sp.cpu(), si.cpu()
            err = float(np.abs(score.numpy() - want[saved]).max())
            report(np.allclose(score.numpy(), want[saved], rtol=1e-4,
                               atol=1e-4) and
                   sp.tolist() == list(want_ip) and
                   si[:int(sp[-1])].tolist() == list(want_ix),
                   f"{name} on {dev.type}, layer {layer}: score (rtol 1e-4) and "
                   "selection == float64 model", f"max |err| {err:.2e}")
        sp0 = torch.full_like(tip, -7)
        si0 = torch.full_like(tids, -7)
        before = {n: t.clone() for n, t in cache.items()}
        try:
            compiled.indexer(tq, cache, tip, tids, sp0, si0, layer=4)
            report(False, f"{name}: layer 4 refused", "no error")
        except ValueError as e:
            sync()
            same = all(torch.equal(cache[n], before[n]) for n in cache)
            report("layer" in str(e) and same and bool((sp0 == -7).all()),
                   f"{name}: a layer outside the lookup refused, nothing "
                   "written", str(e))
    print(f"{passed} passed, {failed} failed")
    if passed + failed == 0:
        return 2
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", metavar="DIR")
    p.add_argument("--run", metavar="DIR")
    p.add_argument("--chip", default="sm_90")
    a = p.parse_args()
    if bool(a.build) == bool(a.run):
        p.error("give exactly one of --build and --run")
    return build(a.build, a.chip) if a.build else run(a.run)


if __name__ == "__main__":
    sys.exit(main())
