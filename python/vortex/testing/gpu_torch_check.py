"""The torch-op checks on a GPU machine (issue 7; docs/torch.md).

    python3 -m vortex.testing.gpu_torch_check --artifacts DIR \
        [--flows block_sparse_attention_g8 running_avg_block_sparse_g8 ...]

For each manifest (CUDA builds from scripts/build-device-artifacts.sh):

* the ops' CUDA implementation (native launcher or ctypes) and the plan
  cache (hits after the first call of a signature);
* one CUDA driver: the process's (`vortex.runtime.driver.get()`) is the
  native module's when it builds; the ctypes fallback and the native
  driver launch the same plan (`vortex.runtime.plan`) to bit-identical
  outputs; a malformed plan is refused naming the field, nothing launched;
* `torch.library.opcheck` of both ops on CUDA tensors;
* `torch.compile(fullgraph=True)`: 0 graph breaks (`torch._dynamo.explain`),
  outputs and every written field bit-identical to eager;
* `mode="reduce-overhead"` with the buffers marked static: Inductor's
  cudagraph skip counter stays 0 and no "skipping cudagraphs" log line
  appears; results bit-identical to eager;
* manual CUDA-graph capture of the cache step and the indexer step, replayed
  after new inputs are copied into the captured tensors: bit-identical to
  eager on the same inputs;
* the first call of a signature inside a capture: correct, and no memory
  outlives the graph;
* two streams running the step at once, with their own inputs, give what
  one stream gives (no shared scratch);
* negative block ids are skipped by the cache kernel; the `loc` form equals
  the explicit block ids;
* bad input on CUDA tensors (wrong device, dtype, shape, non-contiguous,
  aliasing outputs, a stream of another device where there are two GPUs):
  ValueError naming the argument, nothing written;
* with two or more GPUs: the flow runs on cuda:1 while cuda:0 is current,
  bit-identical to cuda:0, and the current device is unchanged.

Prints PASS/FAIL lines and `N passed, M failed`.
"""

from __future__ import annotations

import argparse
import glob
import logging
import os
import sys
import traceback
from typing import Callable, Dict, List

import torch

from ..runtime import driver as vdriver
from ..runtime import native
from ..runtime import plan as vplan
from ..runtime import ops as vops
from ..runtime.manifest import DTYPES, Manifest

POISON = -7


class Report:
    def __init__(self) -> None:
        self.passed = self.failed = 0

    def __call__(self, ok: bool, what: str, detail: object = "") -> None:
        print(("PASS " if ok else "FAIL ") + what +
              (f": {detail}" if detail and (not ok or os.environ.get("V"))
               else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def run(self, what: str, fn: Callable[[], object]) -> None:
        try:
            res = fn()
            ok, detail = (res if isinstance(res, tuple) else (bool(res), ""))
            self(ok, what, detail)
        except Exception:  # noqa: BLE001
            self(False, what, "exception:\n" + traceback.format_exc())


def torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, DTYPES[name][0])


class Problem:
    """Random rows over a random pool, on one device."""

    def __init__(self, flow: vops.Flow, lengths: List[int], device,
                 seed: int = 0, spare: int = 11):
        m = flow.manifest
        g = torch.Generator(device="cpu")
        g.manual_seed(seed)
        total = sum(lengths)
        self.num_blocks = nb = total + spare
        perm = torch.randperm(nb, generator=g).to(torch.int32)
        self.indices = perm[:total].to(device)
        ends = [0]
        for n in lengths:
            ends.append(ends[-1] + n)
        self.indptr = torch.tensor(ends, dtype=torch.int32, device=device)
        self.rows = len(lengths)
        self.total = total
        self.cache: Dict[str, torch.Tensor] = {}
        for n, (shape, dt) in m.cache_shapes(nb).items():
            x = torch.randn(shape, generator=g).to(torch_dtype(dt))
            self.cache[n] = x.to(device)
        self.q_shape = (self.rows, int(m.config["group_size"]),
                        int(m.config["head_dim"]))
        self.q_dtype = torch_dtype(m.tensors["q"].dtype)
        self.gen = g
        self.device = device

    def new_q(self) -> torch.Tensor:
        return torch.randn(self.q_shape, generator=self.gen).to(
            self.q_dtype).to(self.device)

    def outputs(self):
        return (torch.full((self.rows + 1,), POISON, dtype=torch.int32,
                           device=self.device),
                torch.full((self.total,), POISON, dtype=torch.int32,
                           device=self.device))


def clone(cache):
    return {k: v.clone() for k, v in cache.items()}


def same_cache(a, b, names=None) -> bool:
    return all(torch.equal(a[n], b[n]) for n in (names or a))


def lengths_for(flow: vops.Flow) -> List[int]:
    b = flow.budget(0)
    return [0, 1, b, b + 1, 3 * b + 5, 700, 40, 2 * b]


# ---------------------------------------------------------------------------

def check_basics(R: Report, flow: vops.Flow, P: Problem) -> None:
    tag = flow.name
    impl = flow._indexer.cuda_impl
    R(impl is not None, f"{tag}: CUDA impl registered ({impl}; native: "
      f"{native.unavailable_reason() or 'built'})")
    mod = native.load(build=False) if impl == "native" else None

    def plan_cache():
        cache = clone(P.cache)
        sp, si = P.outputs()
        q = P.new_q()
        mod.clear_plan_cache(flow._indexer.qualname)
        for _ in range(5):
            flow.indexer(q, cache, P.indptr, P.indices, sp, si)
        torch.cuda.synchronize()
        hits, misses, size = mod.plan_cache_stats(flow._indexer.qualname)
        return (hits == 4 and misses == 1 and size == 1,
                f"hits {hits}, misses {misses}, size {size}")
    if mod is not None:
        R.run(f"{tag}: plan cached per signature (1 miss, then hits)",
              plan_cache)

    def opcheck(op, args):
        res = torch.library.opcheck(op, args)
        return all(v == "SUCCESS" for v in res.values()), res
    sp, si = P.outputs()
    iargs = [P.new_q()] + [P.cache[n] for n in flow.manifest.cache_names()] \
        + [P.indptr, P.indices, sp, si]
    R.run(f"{tag}: opcheck indexer op", lambda: opcheck(flow.indexer_op, iargs))
    cargs = [P.cache[n] for n in flow.manifest.cache_names()] + [P.indices]
    R.run(f"{tag}: opcheck cache op", lambda: opcheck(flow.cache_op, cargs))


def check_driver(R: Report, flow: vops.Flow, P: Problem) -> None:
    tag = flow.name
    mod = native.load(build=False)
    drv = vdriver.get()
    R(drv.name == ("native" if mod is not None else "ctypes"),
      f"{tag}: one driver per process ({drv.name}; native: "
      f"{native.unavailable_reason() or 'built'})")
    gpu = flow._indexer.cuda

    q = P.new_q()

    def run_with(d):
        cache = clone(P.cache)
        sp, si = P.outputs()
        values = [q] + [cache[n] for n in flow.manifest.cache_names()] + \
            [P.indptr, P.indices, sp, si]
        named = dict(zip(flow._indexer.args, values))
        old, gpu._drv = gpu._drv, d
        try:
            gpu.run_step("indexer", named)
        finally:
            gpu._drv = old
        torch.cuda.synchronize()
        return sp, si, cache

    if mod is None:
        return

    def parity():
        a = run_with(vdriver.NativeDriver(mod))
        b = run_with(vdriver.CtypesDriver())
        same = (torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and
                same_cache(a[2], b[2]))
        return same, "native and ctypes launches of one plan differ"
    R.run(f"{tag}: the native and ctypes drivers launch one plan alike",
          parity)

    def malformed():
        sp, si = P.outputs()
        before = si.clone()
        bad = vplan.Plan([], [("not", "a", "launch")])
        try:
            mod.launch_plan(bad, [sp, si], [], 0, "check")
        except RuntimeError as err:
            torch.cuda.synchronize()
            return ("must be a vortex.runtime.plan.Launch" in str(err) and
                    torch.equal(si, before)), str(err)
        return False, "a malformed plan launched"
    R.run(f"{tag}: a malformed plan is refused, naming the field", malformed)


def check_compile(R: Report, flow: vops.Flow, P: Problem) -> None:
    tag = flow.name
    q = P.new_q()
    written = [w for w in flow.manifest.steps["indexer"].writes
               if w in P.cache]

    def step(q, cache, indptr, indices, sp, si):
        flow.cache_step(cache, indices)
        flow.indexer(q * 1, cache, indptr, indices, sp, si)
        return sp[-1] + 0

    def fullgraph():
        torch._dynamo.reset()
        c_e, c_c = clone(P.cache), clone(P.cache)
        o_e, o_c = P.outputs(), P.outputs()
        step(q, c_e, P.indptr, P.indices, *o_e)
        expl = torch._dynamo.explain(step)(q, clone(P.cache), P.indptr,
                                           P.indices, *P.outputs())
        cf = torch.compile(step, fullgraph=True)
        cf(q, c_c, P.indptr, P.indices, *o_c)
        torch.cuda.synchronize()
        ok = (expl.graph_break_count == 0 and expl.graph_count == 1 and
              all(torch.equal(a, b) for a, b in zip(o_e, o_c)) and
              same_cache(c_e, c_c))
        return ok, (f"graphs {expl.graph_count}, breaks "
                    f"{expl.graph_break_count}, fields written {written}")
    R.run(f"{tag}: torch.compile(fullgraph=True), 0 breaks, == eager",
          fullgraph)

    def reduce_overhead():
        torch._dynamo.reset()
        from torch._dynamo.utils import counters
        counters.clear()
        lines: List[str] = []

        class Grab(logging.Handler):
            def emit(self, record):
                lines.append(record.getMessage())
        h = Grab()
        for name in ("torch._inductor", "torch._inductor.cudagraph_trees",
                     "torch._dynamo"):
            logging.getLogger(name).addHandler(h)
        try:
            c_c = clone(P.cache)
            o_c = P.outputs()
            qs = q.clone()
            for t in list(c_c.values()) + list(o_c) + [P.indptr, P.indices,
                                                        qs]:
                torch._dynamo.mark_static_address(t)
            cf = torch.compile(step, mode="reduce-overhead", fullgraph=True)
            results = []
            for i in range(4):     # warm-up, record, replays
                c_i = {k: v.copy_(P.cache[k]) for k, v in c_c.items()}
                o_c[0].fill_(POISON)
                o_c[1].fill_(POISON)
                cf(qs, c_i, P.indptr, P.indices, *o_c)
                torch.cuda.synchronize()
                results.append((o_c[0].clone(), o_c[1].clone(), clone(c_c)))
            c_e, o_e = clone(P.cache), P.outputs()
            step(q, c_e, P.indptr, P.indices, *o_e)
            torch.cuda.synchronize()
        finally:
            for name in ("torch._inductor", "torch._inductor.cudagraph_trees",
                         "torch._dynamo"):
                logging.getLogger(name).removeHandler(h)
        skips = counters["inductor"].get("cudagraph_skips", 0)
        skip_lines = [ln for ln in lines if "skipping cudagraphs" in ln]
        same = all(torch.equal(r[0], o_e[0]) and torch.equal(r[1], o_e[1])
                   and same_cache(r[2], c_e) for r in results)
        return (skips == 0 and not skip_lines and same,
                f"cudagraph_skips {skips}, skip log lines {skip_lines[:2]}, "
                f"bit-identical {same}")
    R.run(f"{tag}: torch.compile(mode='reduce-overhead') uses CUDA graphs, "
          "== eager", reduce_overhead)


def check_manual_graph(R: Report, flow: vops.Flow, P: Problem) -> None:
    tag = flow.name

    def run():
        static_q = P.new_q()
        static_ids = P.indices.clone()
        cache = clone(P.cache)
        sp, si = P.outputs()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):     # warm: plans, modules, allocator
                flow.cache_step(cache, static_ids)
                flow.indexer(static_q, cache, P.indptr, P.indices, sp, si)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            flow.cache_step(cache, static_ids)
            flow.indexer(static_q, cache, P.indptr, P.indices, sp, si)
        ok = True
        for trial in range(3):
            new_q = P.new_q()
            new_ids = static_ids[torch.randperm(static_ids.numel(),
                                                device=static_ids.device)]
            start = clone(P.cache)
            for k in cache:
                cache[k].copy_(start[k])
            static_q.copy_(new_q)
            static_ids.copy_(new_ids)
            sp.fill_(POISON)
            si.fill_(POISON)
            g.replay()
            e_cache = clone(start)
            e_sp, e_si = P.outputs()
            flow.cache_step(e_cache, new_ids)
            flow.indexer(new_q, e_cache, P.indptr, P.indices, e_sp, e_si)
            torch.cuda.synchronize()
            ok &= (torch.equal(sp, e_sp) and torch.equal(si, e_si) and
                   same_cache(cache, e_cache))
        return ok, "3 replays with new q and block ids"
    R.run(f"{tag}: manual CUDA graph capture + replay with new inputs == "
          "eager", run)


def check_streams(R: Report, flow: vops.Flow, P: Problem) -> None:
    """Two streams run the step at once on different queries (and their own
    caches and outputs): scratch must not be shared between them."""
    tag = flow.name

    def run():
        qa, qb = P.new_q(), P.new_q()
        ca, cb = clone(P.cache), clone(P.cache)
        oa, ob = P.outputs(), P.outputs()
        sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
        for s in (sa, sb):
            s.wait_stream(torch.cuda.current_stream())
        for _ in range(3):   # past the graph-building threshold
            with torch.cuda.stream(sa):
                flow.indexer(qa, ca, P.indptr, P.indices, *oa)
            with torch.cuda.stream(sb):
                flow.indexer(qb, cb, P.indptr, P.indices, *ob)
        torch.cuda.synchronize()
        ea, eb = clone(P.cache), clone(P.cache)
        xa, xb = P.outputs(), P.outputs()
        for _ in range(3):
            flow.indexer(qa, ea, P.indptr, P.indices, *xa)
        for _ in range(3):
            flow.indexer(qb, eb, P.indptr, P.indices, *xb)
        torch.cuda.synchronize()
        ok = (all(torch.equal(a, b) for a, b in zip(oa + ob, xa + xb)) and
              same_cache(ca, ea) and same_cache(cb, eb))
        return ok, "2 streams x 3 steps vs one stream"
    R.run(f"{tag}: two streams at once == one after the other", run)


def check_first_call_in_capture(R: Report, flow: vops.Flow) -> None:
    """The first call of a never-seen signature happens inside a capture:
    its scratch comes from the graph's pool and nothing outlives it."""
    tag = flow.name

    def run():
        P = Problem(flow, [5, 300, 77, 1], torch.device("cuda", 0), seed=9)
        q = P.new_q()
        cache = clone(P.cache)
        sp, si = P.outputs()
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            flow.indexer(q, cache, P.indptr, P.indices, sp, si)
        g.replay()
        e_cache = clone(P.cache)
        e_sp, e_si = P.outputs()
        flow.indexer(q, e_cache, P.indptr, P.indices, e_sp, e_si)
        torch.cuda.synchronize()
        same = (torch.equal(sp, e_sp) and torch.equal(si, e_si) and
                same_cache(cache, e_cache))
        # The eager call (the signature's second) built a step graph that
        # keeps its scratch by design: one block of the plan's buffers,
        # each rounded to 256 bytes (native/plan.h), 512 by the allocator.
        plan = flow.runtime.plan("indexer", dict(
            flow._pools(e_cache), **flow._params, q=q,
            dense_kv_indptr=P.indptr, dense_kv_indices=P.indices,
            sparse_kv_indptr=e_sp, sparse_kv_indices=e_si))
        held = sum(-(-b // 256) * 256 for b in plan.scratch_bytes)
        held = -(-held // 512) * 512
        # Freed before measuring: the caching allocator may hand a large
        # tensor a larger block than it asked for.
        del g, e_cache, e_sp, e_si
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        after = torch.cuda.memory_allocated()
        return (same and after - before <= held,
                f"bit-identical {same}; allocated after the graph and the "
                f"eager reference are gone: {after - before} B, the step "
                f"graph's scratch {held} B")
    R.run(f"{tag}: first call inside a capture: correct, nothing outlives "
          "the graph", run)


def check_cache_forms(R: Report, flow: vops.Flow, P: Problem) -> None:
    tag = flow.name
    fields = [n for n in flow.manifest.steps["cache"].writes]

    def negative_skipped():
        a, b = clone(P.cache), clone(P.cache)
        ids = P.indices[:64]
        mixed = torch.stack([ids, torch.full_like(ids, -1)], 1).reshape(-1)
        flow.cache_step(a, ids)
        flow.cache_step(b, mixed)
        torch.cuda.synchronize()
        return same_cache(a, b, fields), "ids interleaved with -1"
    R.run(f"{tag}: negative block ids are skipped", negative_skipped)

    def loc_form():
        bs = int(flow.config["block_size"])
        H = 2
        # Token slots: some complete a block, some do not, one is padding.
        loc = torch.tensor([bs - 1, 3 * bs - 1, bs + 2, -1, 5 * bs - 1],
                           dtype=torch.int64, device=P.device)
        ids = flow.block_ids_from_loc(loc, H)
        want = [b for b in ids.tolist() if b >= 0]
        if max(want) >= P.num_blocks:
            return False, "pool too small for the test"
        a, b = clone(P.cache), clone(P.cache)
        flow.cache_step(a, loc=loc, num_kv_heads=H)
        flow.cache_step(b, torch.tensor(want, dtype=torch.int32,
                                        device=P.device))
        torch.cuda.synchronize()
        return same_cache(a, b, fields), f"blocks {want}"
    R.run(f"{tag}: loc form == explicit block ids", loc_form)


def check_bad_input(R: Report, flow: vops.Flow, P: Problem) -> None:
    tag = flow.name

    def expect(what, needle, fn):
        def run():
            cache = clone(P.cache)
            before = clone(cache)
            sp, si = P.outputs()
            try:
                fn(cache, sp, si)
                torch.cuda.synchronize()
            except ValueError as err:
                torch.cuda.synchronize()
                untouched = (same_cache(cache, before) and
                             bool((sp == POISON).all()) and
                             bool((si == POISON).all()))
                return (needle in str(err) and untouched,
                        f"{err} (nothing written: {untouched})")
            return False, "no error"
        R.run(f"{tag}: bad input: {what}", run)

    q = P.new_q()
    ip, ix = P.indptr, P.indices
    expect("q on the CPU", "q", lambda c, sp, si: flow.indexer(
        q.cpu(), c, ip, ix, sp, si))
    expect("q of dtype float32", "q", lambda c, sp, si: flow.indexer(
        q.float(), c, ip, ix, sp, si))
    expect("indptr of dtype int64", "dense_kv_indptr",
           lambda c, sp, si: flow.indexer(q, c, ip.long(), ix, sp, si))
    expect("q of the wrong group size", "q", lambda c, sp, si: flow.indexer(
        q[:, :1].contiguous(), c, ip, ix, sp, si))
    expect("non-contiguous q", "q", lambda c, sp, si: flow.indexer(
        q.transpose(1, 2).contiguous().transpose(1, 2), c, ip, ix, sp, si))
    expect("aliasing outputs", "sparse_kv_indptr",
           lambda c, sp, si: flow.indexer(q, c, ip, ix, si[:ip.numel()],
                                          si))
    field = next((n for n in P.cache if n not in ("k", "v")), None)
    if field is not None:
        expect("field of the wrong dtype", field,
               lambda c, sp, si: flow.cache_step(
                   dict(c, **{field: c[field].float()}), ix))
    expect("block_ids on the CPU", "block_ids",
           lambda c, sp, si: flow.cache_step(c, ix.cpu()))
    if torch.cuda.device_count() > 1:
        other = torch.cuda.Stream(device=1)
        expect("a stream of another device", "stream",
               lambda c, sp, si: flow.indexer(q, c, ip, ix, sp, si,
                                              stream=other))


def check_guards(R: Report, path: str, flow: vops.Flow, P: Problem) -> None:
    """Issue 9: bad block ids and a malformed CSR write nothing outside the
    tensors (each tensor sits between canary regions of one allocation) and
    are reported by flow.check(); valid input raises nothing."""
    tag = flow.name
    from ..runtime.cuda import FlowCheckError
    pad = 64
    canary = -12345

    def guarded_cache():
        """Clones of P.cache inside larger allocations whose head and tail
        hold a canary."""
        views, bigs = {}, {}
        for n, t in P.cache.items():
            big = torch.empty((t.shape[0] + 2 * pad,) + tuple(t.shape[1:]),
                              dtype=t.dtype, device=t.device)
            big.fill_(canary)
            big[pad:pad + t.shape[0]].copy_(t)
            views[n], bigs[n] = big[pad:pad + t.shape[0]], big
        return views, bigs

    def guarded_outputs(rows, total):
        big_p = torch.full((rows + 1 + 2 * pad,), canary, dtype=torch.int32,
                           device=P.device)
        big_i = torch.full((total + 2 * pad,), canary, dtype=torch.int32,
                           device=P.device)
        return (big_p[pad:pad + rows + 1], big_i[pad:pad + total],
                [big_p, big_i])

    def canaries_intact(bigs):
        ok = True
        for big in bigs:
            ok &= bool((big[:pad] == canary).all())
            ok &= bool((big[-pad:] == canary).all())
        return ok

    def expect_error(needle):
        try:
            flow.check()
        except FlowCheckError as err:
            # Reset by the check: the next one passes.
            try:
                flow.check()
            except FlowCheckError:
                return False, f"not reset: {err}"
            return needle in str(err), str(err)
        return False, "flow.check() raised nothing"

    def valid_input_clean():
        flow.check()            # every earlier check used valid input
        q = P.new_q()
        sp, si = P.outputs()
        flow.indexer(q, clone(P.cache), P.indptr, P.indices, sp, si)
        flow.cache_step(clone(P.cache), P.indices)
        flow.check()
        return True, "no flag after valid steps"
    R.run(f"{tag}: guards: valid input raises nothing", valid_input_clean)

    nb = P.num_blocks
    for label, bad in (("past the end", nb + 3), ("negative", -2),
                       ("huge", 2 ** 30)):
        def indexer_bad(bad=bad):
            views, bigs = guarded_cache()
            ix = P.indices.clone()
            ix[len(ix) // 2] = bad
            ix[-1] = bad
            sp, si, obigs = guarded_outputs(P.rows, P.total)
            flow.indexer(P.new_q(), views, P.indptr, ix, sp, si)
            torch.cuda.synchronize()
            intact = canaries_intact(list(bigs.values()) + obigs)
            ok, msg = expect_error("dense_kv_indices")
            return ok and intact, f"canaries intact: {intact}; {msg}"
        R.run(f"{tag}: guards: dense_kv_indices id {label} ({bad})",
              indexer_bad)

    def cache_bad_checked():
        views, bigs = guarded_cache()
        ids = P.indices[:8].clone()
        ids[3] = nb + 1
        ids[5] = 2 ** 30
        flow.cache_step(views, ids)
        torch.cuda.synchronize()
        intact = canaries_intact(bigs.values())
        ok, msg = expect_error("block_ids")
        ref, _ = guarded_cache()
        good = ids[(ids >= 0) & (ids < nb)].contiguous()
        flow.cache_step(ref, good)
        torch.cuda.synchronize()
        flow.check()
        same = same_cache(views, ref)
        return ok and intact and same, (f"canaries intact: {intact}; good "
                                        f"ids summarized as alone: {same}; "
                                        f"{msg}")
    R.run(f"{tag}: guards: block_ids past num_blocks", cache_bad_checked)

    def indptr_bad(kind):
        def run():
            views, bigs = guarded_cache()
            ip = P.indptr.clone()
            if kind == "end past total":
                ip[-1] = P.total + 1000
            elif kind == "decreasing":
                ip[2] = 0
                ip[3] = P.total
            else:                       # huge entries
                ip[1:] = 2 ** 30
            sp, si, obigs = guarded_outputs(P.rows, P.total)
            flow.indexer(P.new_q(), views, ip, P.indices, sp, si)
            torch.cuda.synchronize()
            intact = canaries_intact(list(bigs.values()) + obigs)
            ok, msg = expect_error("dense_kv_indptr")
            return ok and intact, f"canaries intact: {intact}; {msg}"
        return run
    for kind in ("end past total", "decreasing", "huge"):
        R.run(f"{tag}: guards: dense_kv_indptr {kind}", indptr_bad(kind))

    def debug_mode():
        dflow = vops.load(path, debug=True)
        ix = P.indices.clone()
        ix[0] = nb + 7
        sp, si = P.outputs()
        try:
            dflow.indexer(P.new_q(), clone(P.cache), P.indptr, ix, sp, si)
        except FlowCheckError as err:
            # A good step afterwards passes in debug mode.
            dflow.indexer(P.new_q(), clone(P.cache), P.indptr, P.indices,
                          sp, si)
            return "dense_kv_indices" in str(err), str(err)
        return False, "debug mode raised nothing"
    R.run(f"{tag}: guards: debug mode raises at the step", debug_mode)

    def in_graph():
        # Inside a CUDA graph the guard still records; check() after replay.
        views, bigs = guarded_cache()
        ix = P.indices.clone()
        ix[1] = nb + 5
        q = P.new_q()
        sp, si, obigs = guarded_outputs(P.rows, P.total)
        flow.indexer(q, views, P.indptr, P.indices, sp, si)   # warm plan
        torch.cuda.synchronize()
        flow.check()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            flow.indexer(q, views, P.indptr, ix, sp, si)
        g.replay()
        torch.cuda.synchronize()
        intact = canaries_intact(list(bigs.values()) + obigs)
        ok, msg = expect_error("dense_kv_indices")
        return ok and intact, f"canaries intact: {intact}; {msg}"
    R.run(f"{tag}: guards: recorded inside a CUDA graph replay", in_graph)


def check_other_device(R: Report, path: str, lengths: List[int]) -> None:
    if torch.cuda.device_count() < 2:
        print("note: one GPU; the cross-device check needs two")
        return

    def run():
        torch.cuda.set_device(0)
        flow = vops.load(path)
        P0 = Problem(flow, lengths, torch.device("cuda", 0), seed=5)
        P1 = Problem(flow, lengths, torch.device("cuda", 1), seed=5)
        q0 = P0.new_q()
        q1 = q0.to("cuda:1")
        o0, o1 = P0.outputs(), P1.outputs()
        c0, c1 = clone(P0.cache), clone(P1.cache)
        flow.cache_step(c0, P0.indices)
        flow.indexer(q0, c0, P0.indptr, P0.indices, *o0)
        flow.cache_step(c1, P1.indices)
        flow.indexer(q1, c1, P1.indptr, P1.indices, *o1)
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)
        cur = torch.cuda.current_device()
        same = (torch.equal(o0[0].cpu(), o1[0].cpu()) and
                torch.equal(o0[1].cpu(), o1[1].cpu()) and
                all(torch.equal(c0[k].cpu(), c1[k].cpu()) for k in c0))
        return (same and cur == 0,
                f"current device after the call: {cur}; results on cuda:1 "
                f"== cuda:0: {same}")
    R.run(f"{os.path.basename(path)}: runs on cuda:1 while cuda:0 is current",
          run)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vortex.testing.gpu_torch_check")
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--flows", nargs="*", default=None,
                    help="manifest flow names (default: all)")
    args = ap.parse_args(argv)
    print(f"device: {torch.cuda.get_device_name()} x "
          f"{torch.cuda.device_count()}, torch {torch.__version__}")
    mod = native.load()
    print(f"native launcher: {'built' if mod else native.unavailable_reason()}")
    R = Report()
    paths = sorted(glob.glob(os.path.join(args.artifacts,
                                          "*.manifest.json")))
    ran = set()
    for path in paths:
        m = Manifest.from_file(path)
        if args.flows and m.flow not in args.flows:
            continue
        ran.add(m.flow)
        flow = vops.load(path)
        lengths = lengths_for(flow)
        P = Problem(flow, lengths, torch.device("cuda", 0))
        check_basics(R, flow, P)
        check_driver(R, flow, P)
        check_compile(R, flow, P)
        check_manual_graph(R, flow, P)
        check_streams(R, flow, P)
        check_first_call_in_capture(R, flow)
        check_cache_forms(R, flow, P)
        check_bad_input(R, flow, P)
        if flow.manifest.status_tensor() is not None:
            check_guards(R, path, flow, P)
        check_other_device(R, path, lengths)
    print(f"{R.passed} passed, {R.failed} failed")
    # Nothing checked (no manifests, or a --flows name that matches none)
    # is a failure, not "0 passed".
    missing = [f for f in (args.flows or []) if f not in ran]
    if not ran or missing:
        print(f"FAIL: no manifest checked in {args.artifacts}"
              + (f" for --flows {' '.join(missing)}" if missing else ""))
        return 2
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
