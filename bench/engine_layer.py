#!/usr/bin/env python3
"""One layer of paged|vortex's static decode (issue 36), at an engine's
shape, taken apart: what the engine benchmark's per-step GPU time spends in
our attention, and what it spends around it.

For N requests of T cached tokens (H KV heads, group G, D 128, bf16; the
engine's block table [N, T/16 + 2] of pages of 16), on one GPU:

  layer    PagedVortex._static_decode for one layer: the K/V write, the
           cache step, the flow's `decode` (or `attend` with --dense) and
           the glue around them (the step's plan is built beforehand, as
           the first layer of a forward does)
  decode   flow.decode alone (indexer + attend over the selection)
  attend   flow.attend alone over every block (the dense baseline's kernel)
  floor    bytes the kernels must read (summaries + selected K/V, or all
           K/V) / measured copy bandwidth

Each as a CUDA graph of one call, timed by `triton.testing.do_bench` on its
replay (L2 flushed by a write before each replay): how a decode step inside
the engine sees it. Then the kernels of one sparse `layer` replay (torch.profiler);
run it with VORTEX_CHAIN_LAUNCHES=0 too, so each kernel's time is its own
(a chained kernel's time includes its wait for the one before).

    python3 bench/engine_layer.py --artifacts DIR --shapes 8x32768 1x32768
"""
import argparse
import collections
import glob
import os
import types

import torch
import triton.testing

import vortex
from bench_indexer import copy_bandwidth   # bench/: bytes/s, read + write
from vortex.integrations.transformers import PagedVortex
from vortex.runtime.cuda import chain_launches_default


def graph_ms(fn):
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return triton.testing.do_bench(g.replay, rep=300), g


class Engine:
    """The engine-side tensors of one decode step: paged K/V caches, the
    block table, cu_seq_lens, and the step's new q/k/v."""

    def __init__(self, pv, N, T, H, dense):
        ps, D, G = pv.page_size, pv.head_dim, pv.group_size
        pages = T // ps + 2                    # the table's width
        self.table = torch.arange(N * pages, dtype=torch.int32,
                                  device="cuda").view(N, pages)
        lens = torch.full((N,), T + 1, dtype=torch.int32)
        self.ck = torch.zeros(N + 1, dtype=torch.int32)
        self.ck[1:] = torch.cumsum(lens, 0)
        self.ck = self.ck.cuda()
        self.cq = torch.arange(N + 1, dtype=torch.int32, device="cuda")
        # One page past the requests' is free: the adapter takes it for its
        # spare row (PagedVortex._spare_page), as from the engine's list.
        kv = torch.randn((N * pages + 1) * ps, H * D, device="cuda",
                         dtype=torch.bfloat16)
        free = collections.deque([N * pages])
        self.cache = types.SimpleNamespace(
            layer_index_to_group_indices={0: (0, 0)},
            key_cache=[kv], value_cache=[torch.randn_like(kv)],
            num_key_value_heads=H, device=kv.device,
            _block_manager=types.SimpleNamespace(
                _uninit_block_ids=free,
                has_enough_free_blocks=lambda n: len(free) >= n))
        # Laid out as a model's projections leave them ([1, tokens, heads,
        # D] in memory, viewed [1, heads, tokens, D]), so the adapter's
        # gathers and scatters see the engine's strides.
        def heads(n):
            return torch.randn(1, N, n, D, device="cuda",
                               dtype=torch.bfloat16).transpose(1, 2)
        self.query, self.key, self.value = heads(H * G), heads(H), heads(H)
        self.layer = types.SimpleNamespace(layer_idx=0)
        pv.layers_skip = frozenset([0] if dense else [])
        # Layer 0 builds the step's plan and the summaries of every block.
        pv._static_decode(types.SimpleNamespace(layer_idx=0), self.query,
                          self.key, self.value, self.cache, self.table,
                          self.ck, self.cq, 1.0)
        pool = pv.caches[0]
        every = torch.arange(pool["k"].shape[0], dtype=torch.int32,
                             device="cuda")
        pv.flow.cache_step(pool, every)
        self.pv, self.pool = pv, pool

    def layer_call(self):
        self.pv._last_layer = -1         # reuse the step's plan
        self.pv._static_decode(self.layer, self.query, self.key, self.value,
                               self.cache, self.table, self.ck, self.cq, 1.0)


def kernels(fn, top=14):
    """Kernel device times of one graph replay of fn."""
    _, g = graph_ms(fn)
    with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            g.replay()
        torch.cuda.synchronize()
    rows = [e for e in prof.key_averages()
            if e.device_type == torch.autograd.DeviceType.CUDA]
    rows.sort(key=lambda e: -e.device_time_total)
    total = sum(e.device_time_total for e in rows) / 5
    out = [f"  kernels of one layer replay: {total:.1f} us in "
           f"{sum(e.count for e in rows) // 5} launches"]
    for e in rows[:top]:
        out.append(f"  {e.device_time_total / 5:8.1f} us x{e.count // 5:<3d} "
                   f"{e.key[:100]}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--shapes", nargs="+", default=["8x32768", "1x32768"],
                    help="REQUESTSxTOKENS")
    ap.add_argument("--heads", type=int, default=8, help="KV heads")
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.artifacts,
                                          "*/*.manifest.json")))
    if not paths:
        raise SystemExit(f"--artifacts: no */*.manifest.json in "
                         f"{args.artifacts}")
    flow = vortex.load(paths[0])
    bw = copy_bandwidth()
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"flow {os.path.basename(os.path.dirname(paths[0]))}; copy "
          f"bandwidth {bw / 1e12:.2f} TB/s; do_bench on one graph replay "
          "(L2 flushed), us")
    H = args.heads
    for shape in args.shapes:
        N, T = (int(x) for x in shape.split("x"))
        chain = chain_launches_default()
        if True:
            res = {}
            for dense in (False, True):
                pv = PagedVortex(flow, name="layer")
                e = Engine(pv, N, T, H, dense)
                res["layer dense" if dense else "layer sparse"] = \
                    graph_ms(e.layer_call)[0]
                p = pv._plan[1]
                q = torch.randn(p["R"] + 1, pv.group_size, pv.head_dim,
                                device="cuda", dtype=torch.bfloat16)
                if dense:
                    res["attend"] = graph_ms(lambda: flow.attend(
                        q, e.pool, p["indptr"], p["indices"],
                        p["last_len"]))[0]
                else:
                    res["decode"] = graph_ms(lambda: flow.decode(
                        q, e.pool, p["indptr"], p["indices"],
                        p["last_len"]))[0]
                    sel = int(p["R"]) * (int(flow.config.get("topk_val", 0))
                                         + 2) * 16 * pv.head_dim * 2 * 2
                    summ = sum(t[:int(p["indptr"][p["R"]])].numel() *
                               t.element_size() for n, t in e.pool.items()
                               if n not in ("k", "v"))
                    res["sparse floor"] = (sel + summ) / bw * 1e3
                else_bytes = int(p["indptr"][p["R"]]) * 16 * pv.head_dim * 4
                res["dense floor"] = else_bytes / bw * 1e3
                if not dense:
                    prof = kernels(e.layer_call)
                del e, pv
                torch.cuda.empty_cache()
            print(f"N {N} T {T} H {H} chain {'on' if chain else 'off'}: " +
                  ", ".join(f"{k} {v * 1e3:.1f}" for k, v in res.items()),
                  flush=True)
        print(prof, flush=True)


if __name__ == "__main__":
    main()
