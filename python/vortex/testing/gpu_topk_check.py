"""The GPU top-k on chosen scores, exactly, on a CUDA device.

    python -m vortex.testing.gpu_topk_check --artifacts DIR [--flows NAME ...]

`vortex.testing.gpu_check` checks the selection on the scores its random data
gives; this check writes the scores itself and launches only the flow's
top-k kernels (each CTA shape of the launch's `choice` in turn), so the
data the selection finds hard are all covered: ties (small integers, a
constant row, integers a few to a value bin), heavy tails (Student t,
Cauchy), all-negative rows, NaN and +-inf, a range that overflows (+-3e38),
subnormal and tiny scores, rows longer than the keys a CTA holds in registers,
and k above a CTA's thread count (the bitonic sort) from the flow's
`topk_ratio`. Every row must equal `vortex.semantics.reference.topk_select`
element for element: BOS, the middle in descending score order with ties to the
lower position and NaN below every number, then EOS. A top-k that
stores a saved score (docs/gpu.md, "Saves in the top-k") gets its field
poisoned; with more rows than its `saves_min_rows` every position
[start, end - eos) of a selecting row must hold the score rounded to the
field's dtype at its block id, and nothing else may change (with fewer,
nothing). Prints one line per (flow, shape, pattern); exits 1 on any
difference.
"""

import argparse
import glob
import os
import sys
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from ..semantics import reference as ref
from ..runtime.manifest import DTYPES, Manifest
from ..runtime.cuda import load as load_gpu

POISON = -7


def patterns(rng: np.random.Generator
             ) -> Dict[str, Callable[[int], np.ndarray]]:
    """Score generators by name: n -> float32 scores (no -0.0, whose order
    against +0.0 the reference does not define)."""
    def normal(n):
        return rng.standard_normal(n)

    def with_specials(n):
        x = rng.standard_normal(n)
        for v in (np.nan, np.inf, -np.inf):
            x[rng.integers(0, n, size=max(1, n // 50))] = v
        return x

    def posinf_few(n):
        x = rng.standard_normal(n)
        x[rng.integers(0, n, size=3)] = np.inf
        return x

    def huge(n):
        x = rng.standard_normal(n) * 1e37
        x[0], x[-1] = 3e38, -3e38
        return x

    return {
        "normal": normal,
        "integers": lambda n: rng.integers(-3, 4, n).astype(np.float64),
        "integers_wide": lambda n: rng.integers(-300, 301, n).astype(
            np.float64),
        "constant": lambda n: np.full(n, 0.5),
        "student_t3": lambda n: rng.standard_t(3, n),
        "cauchy": lambda n: rng.standard_cauchy(n),
        "all_negative": lambda n: -np.abs(rng.standard_normal(n)) - 1.0,
        "nan_inf": with_specials,
        "posinf": posinf_few,
        "huge_range": huge,
        "subnormal": lambda n: rng.standard_normal(n) * 1e-41,
        "tiny": lambda n: rng.standard_normal(n) * 1e-30,
        "half_zero": lambda n: np.where(rng.random(n) < 0.5, 0.0,
                                        rng.standard_normal(n)),
    }


def row_lengths(cfg: ref.Config, rng: np.random.Generator,
                rows: int) -> List[int]:
    """`rows` lengths: edge lengths first (empty, one block, the budget's
    edges, the keys a CTA holds, a row whose k exceeds 512 threads), then
    typical rows."""
    b0 = cfg.budget(0)
    fixed = [0, 1, b0, b0 + 1, b0 + 2, 2047, 2048, 2049, 3000, 9000,
             cfg.bos + cfg.eos + 1]
    out = fixed + [int(rng.integers(1500, 2600)) for _ in range(rows)]
    return out[:rows]


def compare_rows(got_sp: np.ndarray, got_si: np.ndarray,
                 want_sp: np.ndarray, want_si: np.ndarray,
                 lengths: Sequence[int]) -> List[str]:
    """The rows of a sparse CSR that differ from the reference's, element
    for element (the indptr first: if it differs, nothing else is
    compared)."""
    if np.asarray(got_sp).tolist() != np.asarray(want_sp).tolist():
        return ["sparse_kv_indptr differs: got "
                f"{np.asarray(got_sp)[:8].tolist()}..., want "
                f"{np.asarray(want_sp)[:8].tolist()}..."]
    bad = []
    for r in range(len(lengths)):
        a, b = int(want_sp[r]), int(want_sp[r + 1])
        got, want = np.asarray(got_si[a:b]), np.asarray(want_si[a:b])
        if got.tolist() != want.tolist():
            bad.append(f"row {r} (n={lengths[r]}): got "
                       f"{got[:8].tolist()}..., want {want[:8].tolist()}...")
    return bad


def saved_fields(m: Manifest, spec) -> List[str]:
    """The cache tensors a top-k kernel writes: the saves it stores."""
    return [b for b in spec.writes
            if b in m.tensors and m.tensors[b].role == "cache"]


def check_saved(torch, got, score, indptr, indices, cfg: ref.Config,
                stores: bool) -> List[str]:
    """The saved field after the launch against POISON plus, when the top-k
    stores, each selecting row's [start, end - eos) scores at their ids,
    rounded to the field's dtype as the kernel does (NaN equals NaN)."""
    got = got.cpu()
    want = torch.full_like(got, POISON)
    if stores:
        rounded = torch.from_numpy(score).to(got.dtype)
        for r in range(len(indptr) - 1):
            s, e = int(indptr[r]), int(indptr[r + 1])
            if e - s > cfg.budget(e - s):
                ids = torch.from_numpy(indices[s:e - cfg.eos].astype(np.int64))
                want.view(-1)[ids] = rounded[s:e - cfg.eos]
    g = got.float().view(-1).numpy()
    w = want.float().view(-1).numpy()
    bad = np.flatnonzero(~((g == w) | (np.isnan(g) & np.isnan(w))))
    return [f"saved field differs at {len(bad)} block(s), e.g. block "
            f"{int(bad[0])}: got {g[bad[0]]}, want {w[bad[0]]}"] if len(bad) \
        else []


def check_flow(path: str, args, torch) -> List[str]:
    m = Manifest.from_file(path)
    cfg = ref.Config.from_dict(m.config)
    flow = load_gpu(path, args.device)
    specs = [s for s in m.kernels("indexer") if s.choice]
    if not specs:
        return [f"{m.flow}: no top-k choice in the indexer step"]
    dev = torch.device("cuda", args.device)
    lines, problems = [], []
    rng = np.random.default_rng(args.seed)
    for spec in specs:
        for name, gen in patterns(rng).items():
            lengths = row_lengths(cfg, rng, args.rows)
            indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            total = int(indptr[-1])
            indices = rng.permutation(total + 11)[:total]
            score = np.concatenate([gen(n) if n else np.zeros(0)
                                    for n in lengths]).astype(np.float32)
            want_sp, want_si = ref.topk_select(
                score, ref.Csr(indptr.tolist(), indices.tolist()), cfg)
            t = {
                "dense_kv_indptr": torch.tensor(indptr, dtype=torch.int32,
                                                device=dev),
                "dense_kv_indices": torch.tensor(indices, dtype=torch.int32,
                                                 device=dev),
                "sparse_kv_indptr": torch.full((len(lengths) + 1,), POISON,
                                               dtype=torch.int32, device=dev),
                "sparse_kv_indices": torch.full((total,), POISON,
                                                dtype=torch.int32,
                                                device=dev),
            }
            saves = saved_fields(m, spec)
            for f in saves:
                t[f] = torch.full((total + 11, 1, 1), POISON,
                                  dtype=getattr(torch,
                                                DTYPES[m.tensors[f].dtype][0]),
                                  device=dev)
            scratch_bytes, launches = flow.plan(
                "indexer", t, kernels=[spec.kernel])
            if len(scratch_bytes) != 1 or len(launches) != 1:
                return [f"{m.flow}: {spec.kernel} plans {len(launches)} "
                        f"launch(es) over {len(scratch_bytes)} scratch "
                        "buffer(s), expected one over the scores"]
            buf = torch.zeros(max(scratch_bytes[0], 4) // 4,
                              dtype=torch.float32, device=dev)
            buf[:total] = torch.from_numpy(score).to(dev)
            flow.run_step("indexer", t, kernels=[spec.kernel], scratch=[buf])
            torch.cuda.synchronize(dev)
            flow.check(args.device)
            bad = compare_rows(t["sparse_kv_indptr"].cpu().numpy(),
                               t["sparse_kv_indices"].cpu().numpy(),
                               want_sp, want_si, lengths)
            min_rows = next((p.value for p in spec.params
                             if p.name == "saves_min_rows"), None)
            for f in saves:
                bad += [f"{f}: {p}" for p in check_saved(
                    torch, t[f], score, indptr, indices, cfg,
                    stores=len(lengths) > min_rows)]
            tag = (f"{m.flow} {spec.kernel.rsplit('_', 1)[-1]} "
                   f"({spec.block[0]} threads) {name}")
            kmax = max(int(want_sp[r + 1] - want_sp[r])
                       for r in range(len(lengths)))
            lines.append(f"{tag}: {len(lengths)} rows, {total} blocks, "
                         f"largest budget {kmax}"
                         + (f", saved field{'s' * (len(saves) > 1)} "
                            + ", ".join(saves) if saves else "")
                         + ": " + ("ok" if not bad else f"{len(bad)} problem(s)"))
            problems += [f"{tag}: {p}" for p in bad[:5]]
    print("\n".join(lines))
    return problems


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True,
                    help="directory of <flow>.manifest.json (+ .cubin/.ptx)")
    ap.add_argument("--flows", nargs="*", default=None,
                    help="only manifests whose flow name starts with these")
    ap.add_argument("--rows", type=int, default=40,
                    help="rows per launch (at most 11: the first edge "
                         "lengths only)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args(argv)
    if args.rows < 1:
        ap.error(f"--rows must be at least 1, got {args.rows}")
    import torch
    if not torch.cuda.is_available():
        print("gpu_topk_check: no CUDA device", file=sys.stderr)
        return 2
    paths = sorted(glob.glob(os.path.join(args.artifacts,
                                          "*.manifest.json")))
    if args.flows:
        paths = [p for p in paths if any(
            os.path.basename(p).startswith(f) for f in args.flows)]
    if not paths:
        print(f"gpu_topk_check: no manifests in {args.artifacts}",
              file=sys.stderr)
        return 2
    print(f"device: {torch.cuda.get_device_name(args.device)}")
    problems: List[str] = []
    for p in paths:
        problems += check_flow(p, args, torch)
    for p in problems:
        print("PROBLEM:", p)
    print(f"gpu_topk_check: {len(paths)} flow(s), "
          f"{'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
