"""What the GPU check scripts (learned_gpu_check, custom_gpu_check,
reshape_gpu_check, int4_gpu_check, mla_gpu_check) share: their command
line, `--build DIR [--chip CHIP]` on the machine with MLIR, then `--run DIR` on the GPU
machine, the walk over a directory of manifests, the comparison of an
attention result with its float64 reference, their PASS/FAIL lines
(`Report`), and their last line and exit status."""
import argparse
import glob
import os

import numpy as np


def summary(passed: int, failed: int) -> int:
    """Prints `N passed, M failed`; returns the exit status: 2 when nothing
    was checked, 1 on a failure, else 0."""
    print(f"{passed} passed, {failed} failed")
    if passed + failed == 0:
        return 2
    return 1 if failed else 0


class Report:
    """`report(ok, what, detail="")` prints one `PASS: what detail` or
    `FAIL: ...` line and counts it; `report.summary()` is `summary`'s."""

    def __init__(self) -> None:
        self.passed = self.failed = 0

    def __call__(self, ok, what: str, detail: str = "") -> None:
        self.passed += bool(ok)
        self.failed += not ok
        print(f"{'PASS' if ok else 'FAIL'}: {what} {detail}")

    def summary(self) -> int:
        return summary(self.passed, self.failed)


def run_manifests(out: str, check_flow) -> int:
    """`check_flow(path, tally)` for every `DIR/*/*.manifest.json` of `out`,
    in order; `tally(ok, what, detail=None)` prints one PASS/FAIL line (the
    detail under a failure), and an exception is one failure naming the
    path. Returns `summary`'s exit status."""
    results = []

    def tally(ok, what, detail=None):
        results.append(bool(ok))
        print(("PASS " if ok else "FAIL ") + what +
              ("" if ok or not detail else f"\n    {detail}"), flush=True)

    for path in sorted(glob.glob(os.path.join(out, "*", "*.manifest.json"))):
        try:
            check_flow(path, tally)
        except Exception as err:  # noqa: BLE001
            tally(False, f"{path}: {type(err).__name__}: {err}")
    return summary(sum(results), len(results) - sum(results))


def attention_agrees(o64, l64, wo, wl, o_tol: float, l_tol: float):
    """Whether o and lse (float64 arrays) equal the reference's `wo`, `wl`:
    o finite and within o_tol (rtol = atol), lse -inf exactly where the
    reference's is and within l_tol elsewhere, and o 0 there. Returns
    (ok, detail)."""
    none = np.isneginf(wl)
    ok = bool(o64.shape == wo.shape and np.isfinite(o64).all()
          and np.allclose(o64, wo, rtol=o_tol, atol=o_tol)
          and (np.isneginf(l64) == none).all()
          and np.allclose(l64[~none], wl[~none], rtol=l_tol, atol=l_tol)
          and (o64[none] == 0).all())
    if o64.shape != wo.shape:
        return ok, f"o has shape {o64.shape}, the reference {wo.shape}"
    lse_err = np.abs(np.nan_to_num(l64[~none]) - wl[~none])
    return ok, (f"max |o - ref| {np.abs(np.nan_to_num(o64) - wo).max():.3g}, "
                f"max |lse - ref| {lse_err.max() if lse_err.size else 0:.3g}")


def main(doc: str, build, run) -> int:
    """Parses the command line and calls `build(dir, chip)` or `run(dir)`."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--build", metavar="DIR")
    p.add_argument("--run", metavar="DIR")
    p.add_argument("--chip", default="sm_90")
    a = p.parse_args()
    if bool(a.build) == bool(a.run):
        p.error("give exactly one of --build and --run")
    return build(a.build, a.chip) if a.build else run(a.run)
