#!/usr/bin/env python3
"""Indexer-step benchmark of the compiled GPU flows (docs/benchmarks.md).

    python3 bench/bench_indexer.py --artifacts DIR [--flows gqa_quest_sparse_attention
        block_sparse_attention] [--batch 1 8 64] [--heads 8] [--blocks 2048]

For every manifest in DIR whose flow is one of --flows (the flow name or a
variant of it, e.g. gqa_quest_sparse_attention_g5_k64; G, D, topk_val come
from the manifest's config), and every batch size B (requests):

  rows  = B x heads (each (request, KV head) pair is a row),
  every row n = --blocks blocks (2048 blocks of 16 tokens = 32K tokens),
  all rows need selection (budget = max(topk_val + bos + eos, n * ratio)).

Measured (median of --reps timed runs after warm-up, CUDA events):

  (a) our score kernel(s): the indexer's kernels that do not write the sparse
      CSR (runtime kernel subset), captured in a CUDA graph;
  (b) our whole indexer step (all its kernels), captured in a CUDA graph,
      and the same step launched without a graph (Python launch overhead
      included, column "no graph"); with --chain-launches both, also the
      step without programmatic dependent launch, each way timed twice,
      alternating, and averaged;
  (c) the HBM floors: bytes the step must move / measured copy bandwidth;
  (d) torch.compile of the torch reference of the same step
      (eager mode of the flow's Python module, vortex.semantics.eager.indexer, max_n
      static; --compile-mode), launched plainly and captured in a CUDA
      graph of the same K steps as ours;
  (e) the eager torch reference;
  (f) the Triton peer (bench/peers.py): a score kernel written the
      vortex_torch way (one program per (row, chunk of blocks)) and the step
      it makes with torch.topk, both captured in CUDA graphs like ours, and
      its selection compared with ours.

Every timed run goes through R rotating input sets (q, block lists, pool
regions, outputs) whose combined footprint is >= 2 x L2, so no run finds its
inputs in L2; a timed run executes K >= 16 consecutive steps (cycling through
the sets) and reports time / K. Our steps are replayed from a CUDA graph of
those K steps; the torch references run eagerly / compiled (no graph).

Byte counts (per step; P = scored positions = sum over rows of
n - bos - eos, S = selected blocks = sum of budgets, R = rows):

  score floor = sum over the tensors the score kernel(s) read (manifest
      "reads" of those kernels, scratch excluded):
        batched inputs ([rows, ...], e.g. q):  R x inner x itemsize
        dense_kv_indptr:                       (R + 1) x 4
        ragged inputs ([total], block ids):    P x 4
        paged cache fields ([num_blocks, ...]) P x inner x itemsize
          (gqa_quest: max + min = 2 x 128 x 2 B per block;
           block_sparse: centroids = 128 x 2 B per block)
        a field the kernels also write (a Save, running_avg's
          running_score) counts twice: read and written back
      + the score written once, P x 4 (one f32 per scored position,
        whatever the kernels materialize)
  top-k floor = P x 4 (read the scores) + S x 4 (read the kept block ids)
      + S x 4 (write sparse_kv_indices) + 2 (R + 1) x 4 (indptrs)
  step floor  = score floor + top-k floor
  floor time  = bytes / copy bandwidth, where the copy bandwidth is
      2 x bytes / time of a large device-to-device torch copy (read + write).

Prints a table (and writes it as markdown to $OUT/bench.md when OUT is set,
or to --md). Runs on one GPU; needs torch, the manifests and their cubins.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import math
import os
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence


import torch

from vortex.semantics import reference as npref
from vortex.runtime import cuda as runtime
from vortex.semantics import eager
from vortex.runtime.manifest import DTYPES, Manifest, budget

import peers  # bench/peers.py


def _torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, DTYPES[name][0])


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------

def time_cuda(fn: Callable[[], None], reps: int, warmup: int) -> float:
    """Median milliseconds of fn() over reps runs (CUDA events)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def copy_bandwidth(nbytes: int = 1 << 31, reps: int = 10) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting read + write."""
    x = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    x.fill_(1)
    ms = time_cuda(lambda: y.copy_(x), reps, 3)
    return 2 * nbytes / (ms * 1e-3)


def l2_bytes() -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or 50 * 2 ** 20)


# ---------------------------------------------------------------------------
# Byte counts
# ---------------------------------------------------------------------------

def score_floor_bytes(m: Manifest, score_kernels: Sequence[str],
                      R: int, P: int) -> int:
    reads: List[str] = []
    written_back: List[str] = []
    for k in m.kernels("indexer", score_kernels):
        # Without a `reads` list, every buffer the kernel does not write.
        names = list(k.reads) if k.reads else \
            [n for n in k.buffers() if n not in k.writes]
        for n in names:
            if n not in reads:
                reads.append(n)
            # A field read and written back (a Save) moves its bytes twice.
            if n in k.writes and n not in written_back:
                written_back.append(n)
    total = 0
    for n in reads + written_back:
        t = m.tensors[n]
        if t.role == "scratch":
            continue
        lead = t.shape[0].symbol if t.shape else None
        if n == "dense_kv_indptr":
            total += (R + 1) * 4
        elif lead is None:                       # a static tensor
            total += math.prod(t.extents({})) * t.itemsize
        elif lead == "rows":
            total += R * t.inner_numel() * t.itemsize
        elif lead in ("total", "num_blocks"):
            total += P * t.inner_numel() * t.itemsize
        else:
            raise ValueError(f"{n}: cannot count bytes of leading {lead}")
    return total + P * 4


def topk_floor_bytes(R: int, P: int, S: int) -> int:
    return P * 4 + S * 4 + S * 4 + 2 * (R + 1) * 4


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

class Sets:
    """Rotating input sets over one pool; set i uses pool blocks
    [i*T, (i+1)*T)."""

    def __init__(self, m: Manifest, flow, cfg: npref.Config, R: int,
                 n: int, n_sets: int, need: Sequence[str], layout: str,
                 seed: int = 0):
        dev = torch.device("cuda")
        g = torch.Generator(device=dev)
        g.manual_seed(seed)
        T = R * n
        self.T, self.R, self.n = T, R, n
        nb = n_sets * T
        self.cache: Dict[str, torch.Tensor] = {}
        for name, (shape, dt) in m.cache_shapes(nb).items():
            if name not in need:
                continue
            self.cache[name] = torch.randn(shape, generator=g, device=dev).to(
                _torch_dtype(dt))
        self.sets = []
        qd = _torch_dtype(m.tensors["q"].dtype)
        for i in range(n_sets):
            if layout == "random":
                ids = torch.randperm(T, generator=g, device=dev) + i * T
            else:
                ids = torch.arange(T, device=dev) + i * T
            self.sets.append(dict(
                q=torch.randn((R, cfg.group_size, cfg.head_dim), generator=g,
                              device=dev).to(qd),
                indptr=(torch.arange(R + 1, device=dev) * n).to(torch.int32),
                indices=ids.to(torch.int32),
                sp=torch.zeros(R + 1, dtype=torch.int32, device=dev),
                si=torch.zeros(T, dtype=torch.int32, device=dev)))


def run_ours(flow, S: Sets, i: int, kernels=None) -> None:
    """Our indexer step (or the kernel subset) through the runtime: the
    timed kernels are the op's; k and v, which no indexer kernel reads, are
    not allocated."""
    s = S.sets[i]
    flow.run_step("indexer", dict(S.cache, q=s["q"],
                                  dense_kv_indptr=s["indptr"],
                                  dense_kv_indices=s["indices"],
                                  sparse_kv_indptr=s["sp"],
                                  sparse_kv_indices=s["si"]),
                  kernels=kernels)


def graph_of(fn_step: Callable[[int], None], K: int, n_sets: int):
    """A CUDA graph of K consecutive steps cycling through the sets, or None
    if capture fails."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(n_sets):
            fn_step(i)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            for j in range(K):
                fn_step(j % n_sets)
    except Exception as err:  # noqa: BLE001
        print(f"    (graph capture failed: {err}; timing plain launches)")
        torch.cuda.synchronize()
        return None
    return g


# ---------------------------------------------------------------------------

def fmt(x: Optional[float], nd: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{nd}f}"


def compare_selection(sp_a: torch.Tensor, si_a: torch.Tensor,
                      sp_b: torch.Tensor, si_b: torch.Tensor, R: int) -> str:
    """Two sparse CSR selections: the same indptr, and how many of the R rows
    keep the same block set."""
    same_ip = torch.equal(sp_a, sp_b)
    same = 0
    if same_ip:
        sp = sp_a.cpu().numpy()
        a, b = si_a.cpu().numpy(), si_b.cpu().numpy()
        same = sum(set(a[sp[r]:sp[r + 1]].tolist()) ==
                   set(b[sp[r]:sp[r + 1]].tolist()) for r in range(R))
    return f"indptr {'ok' if same_ip else 'DIFFERS'}, {same}/{R} rows same set"


def state_of(m: Manifest, S: Sets) -> Dict[str, torch.Tensor]:
    """Copies of the cache fields the indexer step writes (saved state)."""
    return {k: S.cache[k].clone() for k in m.steps["indexer"].writes
            if k in S.cache}


def restore(S: Sets, snap: Dict[str, torch.Tensor]) -> None:
    for k, v in snap.items():
        S.cache[k].copy_(v)


def run_peers(args, flow_name: str, cfg, S: Sets, R: int, n: int, K: int,
              n_sets: int, flow) -> Dict[str, Optional[float]]:
    """The Triton peer's score kernel and step (bench/peers.py), each
    captured in a CUDA graph of K steps like ours, and its selection
    against ours on set 0 (from the same state)."""
    res: Dict[str, object] = dict(tri_score=None, tri_step=None,
                                  peer_check=None)
    if not args.peers:
        return res
    try:
        pstep = peers.triton_step(flow_name, cfg, S.cache, R, n)
    except Exception as err:  # noqa: BLE001
        print(f"    Triton peer unavailable: {err}")
        return res
    if pstep is None:
        return res
    if not args.no_check:
        s0 = S.sets[0]
        snap = state_of(flow.manifest, S)
        run_ours(flow, S, 0)
        restore(S, snap)
        ours = (s0["sp"].clone(), s0["si"].clone())
        pstep(s0, False)
        torch.cuda.synchronize()
        res["peer_check"] = compare_selection(ours[0], ours[1], s0["sp"],
                                              s0["si"], R)
        print(f"    Triton peer: {res['peer_check']}")
    for label, score_only in (("tri_score", True), ("tri_step", False)):
        g = graph_of(lambda i: pstep(S.sets[i], score_only), K, n_sets)
        if g is None:
            continue
        res[label] = time_cuda(g.replay, args.reps, args.warmup) * 1e3 / K
        del g
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--flows", nargs="*",
                    default=["gqa_quest_sparse_attention",
                             "block_sparse_attention",
                             "running_avg_block_sparse"],
                    help="reference flow names (variants match by prefix)")
    ap.add_argument("--manifests", nargs="*", default=None,
                    help="only these manifest flow names")
    ap.add_argument("--batch", nargs="*", type=int, default=[1, 8, 64])
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=2048,
                    help="blocks per row (2048 x 16 tokens = 32K)")
    ap.add_argument("--topk-val", type=int, default=None,
                    help="only manifests with this topk_val")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=16,
                    help="minimum consecutive steps per timed run (K)")
    ap.add_argument("--layout", choices=["random", "contiguous"],
                    default="random", help="block ids of a row in the pool")
    ap.add_argument("--compile-mode", default="default",
                    help="torch.compile mode (default, max-autotune-no-"
                         "cudagraphs, ...); 'none' to skip")
    ap.add_argument("--no-eager", action="store_true")
    ap.add_argument("--no-peers", dest="peers", action="store_false",
                    help="skip the Triton peers (bench/peers.py)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the selection sanity check against the reference")
    ap.add_argument("--md", default=None, help="markdown output path")
    ap.add_argument("--chain-launches", choices=["on", "off", "both"],
                    default="on",
                    help="launch the step's chained kernels with programmatic "
                         "dependent launch (on), without (off), or time the "
                         "step both ways, alternating (both)")
    args = ap.parse_args(argv)

    torch.backends.cuda.matmul.allow_tf32 = False
    dev_name = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    torch.cuda.empty_cache()
    l2 = l2_bytes()
    print(f"device: {dev_name}; copy bandwidth {bw / 1e9:.0f} GB/s "
          f"(read+write); L2 {l2 / 2 ** 20:.0f} MiB; torch {torch.__version__}")
    if args.compile_mode != "none":
        import torch._dynamo as dynamo
        for attr in ("recompile_limit", "cache_size_limit",
                     "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(dynamo.config, attr):
                setattr(dynamo.config, attr, 1024)

    paths = sorted(glob.glob(os.path.join(args.artifacts, "*.manifest.json")))
    selected = []
    for p in paths:
        m = Manifest.from_file(p)
        try:
            tf, tf_fields = eager.flow_for(m.flow, m.config)
        except KeyError:
            continue
        if type(tf)._vortex_flow_name not in args.flows:
            continue
        if args.manifests and m.flow not in args.manifests:
            continue
        if args.topk_val is not None and \
                int(m.config["topk_val"]) != args.topk_val:
            continue
        selected.append((p, m, tf, tf_fields))
    if not selected:
        print(f"no manifest of {args.flows} in {args.artifacts}")
        return 1

    rows_out = []
    for path, m, tf, tf_fields in selected:
        cfg = npref.Config.from_dict(m.config)
        # Multi-token flows (q = [rows, T x G, D]): the inputs and the peers
        # see T x G query rows per row.
        q_rows = m.tensors["q"].extents({"rows": 1})[1]
        tokens = q_rows // cfg.group_size
        cfg = dataclasses.replace(cfg, group_size=q_rows)
        flow = runtime.load(path)
        score_k = flow.score_kernels()
        print(f"\n{m.flow}: T={tokens} query rows={q_rows} D={cfg.head_dim} "
              f"topk_val={cfg.topk_val} kernels {flow.kernel_names('indexer')} "
              f"(score: {score_k}) from {os.path.basename(flow.loaded_from)}")
        for k, v in flow.kernel_info().items():
            print(f"    {k}: {v}")
        need = set(m.used_tensors(m.kernels("indexer")))
        need |= set(tf_fields)
        for B in args.batch:
            R = B * args.heads
            n = args.blocks
            kept = budget(m.config, n)
            needs = n > kept
            P = R * (n - cfg.bos - cfg.eos) if needs else 0
            Ssel = R * (kept if needs else n)
            sfloor = score_floor_bytes(m, score_k, R, P)
            tfloor = topk_floor_bytes(R, P, Ssel)
            set_bytes = sfloor + tfloor
            n_sets = max(2, min(64, math.ceil(2 * l2 / max(set_bytes, 1))))
            K = max(args.steps, n_sets)
            S = Sets(m, flow, cfg, R, n, n_sets, need, args.layout)
            print(f"  B={B} rows={R} n={n} budget={kept}: {n_sets} rotating "
                  f"sets of {set_bytes / 2 ** 20:.1f} MiB, {K} steps per run")

            # sanity: our selection vs the reference on set 0
            check = ""
            if not args.no_check:
                # A flow that saves state: the reference starts from the
                # state ours started from.
                snap = state_of(m, S)
                run_ours(flow, S, 0)
                restore(S, snap)
                s0 = S.sets[0]
                sc, rsp, rsi = eager.indexer(tf, s0["q"], dict(S.cache),
                                             s0["indptr"], s0["indices"],
                                             m.config, max_n=n)
                torch.cuda.synchronize()
                check = compare_selection(s0["sp"], s0["si"], rsp, rsi, R)
                print(f"    check: {check}")

            def step(kern):
                return lambda i: run_ours(flow, S, i, kern)

            res = {}
            flow.chain_launches = args.chain_launches != "off"
            timed = [("score", score_k, flow.chain_launches),
                     ("step", None, flow.chain_launches)]
            if args.chain_launches == "both":
                # Interleaved with the chained step, so both see one clock.
                timed += [("step_unchained", None, False),
                          ("step_chained2", None, True),
                          ("step_unchained2", None, False)]
            for label, kern, chained in timed:
                flow.chain_launches = chained
                g = graph_of(step(kern), K, n_sets)
                if g is not None:
                    ms = time_cuda(g.replay, args.reps, args.warmup)
                else:
                    ms = time_cuda(lambda: [step(kern)(j % n_sets)
                                            for j in range(K)],
                                   args.reps, args.warmup)
                res[label] = ms * 1e3 / K
                del g
            flow.chain_launches = args.chain_launches != "off"
            if "step_chained2" in res:
                # Each way: the mean of its two runs.
                res["step"] = (res["step"] + res.pop("step_chained2")) / 2
                res["step_unchained"] = (res["step_unchained"] +
                                         res.pop("step_unchained2")) / 2
                print(f"    step chained {res['step']:.1f} us, unchained "
                      f"{res['step_unchained']:.1f} us")
            ms = time_cuda(lambda: [run_ours(flow, S, j % n_sets)
                                    for j in range(K)], args.reps, args.warmup)
            res["nograph"] = ms * 1e3 / K

            def ref_step(q, cache, ip, ids):
                return eager.indexer(tf, q, cache, ip, ids, m.config,
                                     max_n=n)

            def torch_run(fn):
                def run():
                    for j in range(K):
                        s = S.sets[j % n_sets]
                        fn(s["q"], S.cache, s["indptr"], s["indices"])
                return run

            res["compile"] = res["eager"] = res["cgraph"] = None
            if args.compile_mode != "none":
                try:
                    kw = {} if args.compile_mode == "default" else \
                        {"mode": args.compile_mode}
                    cfn = torch.compile(ref_step, dynamic=False, **kw)
                    t0 = time.time()
                    cfn(S.sets[0]["q"], S.cache, S.sets[0]["indptr"],
                        S.sets[0]["indices"])
                    torch.cuda.synchronize()
                    print(f"    torch.compile: {time.time() - t0:.1f} s")
                    ms = time_cuda(torch_run(cfn), max(3, args.reps // 4),
                                   args.warmup)
                    res["compile"] = ms * 1e3 / K
                    # The same compiled step captured in a CUDA graph, as
                    # ours is.
                    def cstep(i):
                        s = S.sets[i]
                        cfn(s["q"], S.cache, s["indptr"], s["indices"])
                    g = graph_of(cstep, K, n_sets)
                    if g is not None:
                        res["cgraph"] = time_cuda(g.replay, args.reps,
                                                  args.warmup) * 1e3 / K
                    del g
                except Exception as err:  # noqa: BLE001
                    print(f"    torch.compile failed: {err}")
            if not args.no_eager:
                ms = time_cuda(torch_run(ref_step), max(3, args.reps // 4), 1)
                res["eager"] = ms * 1e3 / K
            res.update(run_peers(args, type(tf)._vortex_flow_name, cfg, S,
                                 R, n, K, n_sets, flow))
            sfl = sfloor / bw * 1e6
            stf = (sfloor + tfloor) / bw * 1e6
            row = dict(flow=m.flow, G=cfg.group_size, B=B, R=R,
                       topk=cfg.topk_val, score=res["score"], sfloor=sfl,
                       step=res["step"], nograph=res["nograph"], stfloor=stf,
                       compile=res["compile"], eager=res["eager"], check=check,
                       cgraph=res["cgraph"], tscore=res["tri_score"],
                       tstep=res["tri_step"], pcheck=res["peer_check"],
                       unchained=res.get("step_unchained"))
            rows_out.append(row)
            print(f"    score {res['score']:.1f} us (floor {sfl:.1f}), step "
                  f"{res['step']:.1f} us (floor {stf:.1f}; no graph "
                  f"{res['nograph']:.1f}), compile {fmt(res['compile'])} us "
                  f"(in a graph {fmt(res['cgraph'])}), eager "
                  f"{fmt(res['eager'])} us, triton score "
                  f"{fmt(res['tri_score'])} step {fmt(res['tri_step'])} us")
            S = None
            torch.cuda.empty_cache()
        flow.close()

    both = args.chain_launches == "both"
    hdr = ["flow", "G", "B", "rows", "topk_val", "score µs", "score floor µs",
           "score/floor", "step µs"] + (
        ["step unchained µs"] if both else []) + [
           "step floor µs", "step/floor",
           "step no-graph µs", "Triton score µs", "Triton step µs",
           "torch.compile graph µs", "torch.compile µs", "eager µs",
           "best peer score / ours", "best peer step / ours"]
    lines = ["| " + " | ".join(hdr) + " |",
             "|" + "|".join("---" for _ in hdr) + "|"]
    for r in rows_out:
        def ratio(a, b):
            return fmt(a / b, 2) if a and b else "-"
        step_peers = [x for x in (r["tstep"], r["cgraph"], r["compile"],
                                  r["eager"]) if x]
        lines.append("| " + " | ".join([
            r["flow"], str(r["G"]), str(r["B"]), str(r["R"]), str(r["topk"]),
            fmt(r["score"]), fmt(r["sfloor"]), ratio(r["score"], r["sfloor"]),
            fmt(r["step"])] + ([fmt(r["unchained"])] if both else []) + [
            fmt(r["stfloor"]), ratio(r["step"], r["stfloor"]),
            fmt(r["nograph"]), fmt(r["tscore"]), fmt(r["tstep"]),
            fmt(r["cgraph"]), fmt(r["compile"]), fmt(r["eager"]),
            ratio(r["tscore"], r["score"]),
            ratio(min(step_peers) if step_peers else None, r["step"]),
        ]) + " |")
    head = (f"Device: {dev_name}; copy bandwidth {bw / 1e9:.0f} GB/s "
            f"(read + write, {2 ** 31 >> 20} MiB copy); L2 "
            f"{l2 / 2 ** 20:.0f} MiB; torch {torch.__version__}; "
            f"{args.heads} KV heads, {args.blocks} blocks of "
            f"{selected[0][1].config.get('block_size')} tokens per row, "
            f"layout {args.layout}, compile mode {args.compile_mode}, "
            f"chained launches {args.chain_launches}.")
    checks = [f"- {r['flow']} B={r['B']}: {r['check']}"
              + (f"; Triton peer vs ours: {r['pcheck']}" if r["pcheck"] else "")
              for r in rows_out if r["check"]]
    md = head + "\n\n" + "\n".join(lines) + "\n" + (
        "\nSelection check vs the torch reference (set 0):\n\n" +
        "\n".join(checks) + "\n" if checks else "")
    print("\n" + md)
    out = args.md
    if out is None and os.environ.get("OUT"):
        out = os.path.join(os.environ["OUT"], "bench.md")
    if out:
        with open(out, "w") as f:
            f.write(md)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
