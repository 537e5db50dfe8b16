#!/usr/bin/env python3
"""Checks and times the attend step's GPU kernels straight from a
vortex-compile output directory (manifest + cubin), without the runtime:
launched through ctypes on libcuda, compared with a float64 reference of
docs/contract.md's attend (softmax over exactly the visible tokens, NaN in
every pool slot past the lengths), then timed at the issue-35 shape.

  attend_gpu_check.py DIR [DIR...] [--bench DIR]
"""
import ctypes
import json
import math
import os
import sys

import torch

DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
      "f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2}


class Driver:
    def __init__(self):
        self.L = ctypes.CDLL("libcuda.so.1")
        P, U = ctypes.c_void_p, ctypes.c_uint
        self.L.cuModuleLoadData.argtypes = [ctypes.POINTER(P), P]
        self.L.cuModuleGetFunction.argtypes = [ctypes.POINTER(P), P,
                                               ctypes.c_char_p]
        self.L.cuLaunchKernel.argtypes = [P, U, U, U, U, U, U, U, P,
                                          ctypes.POINTER(P), P]
        self.L.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int),
                                              ctypes.c_int, P]
        self.L.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [
            ctypes.POINTER(ctypes.c_int), P, ctypes.c_int, ctypes.c_size_t]

    def check(self, r, what):
        if r != 0:
            raise RuntimeError(f"{what}: CUDA error {r}")

    def load(self, path):
        data = open(path, "rb").read()
        buf = ctypes.create_string_buffer(data, len(data))
        mod = ctypes.c_void_p()
        self.check(self.L.cuModuleLoadData(ctypes.byref(mod),
                                           ctypes.cast(buf, ctypes.c_void_p)),
                   f"load {path}")
        self._keep = buf
        return mod

    def func(self, mod, name):
        f = ctypes.c_void_p()
        self.check(self.L.cuModuleGetFunction(ctypes.byref(f), mod,
                                              name.encode()), name)
        return f

    def attr(self, f, a):
        v = ctypes.c_int()
        self.check(self.L.cuFuncGetAttribute(ctypes.byref(v), a, f), "attr")
        return v.value

    def occupancy(self, f, threads):
        v = ctypes.c_int()
        self.check(self.L.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(v), f, threads, 0), "occupancy")
        return v.value

    def launch(self, f, grid, threads, values):
        arr = (ctypes.c_void_p * len(values))()
        for i, v in enumerate(values):
            arr[i] = ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
        stream = torch.cuda.current_stream().cuda_stream
        self.check(self.L.cuLaunchKernel(f, grid[0], grid[1], grid[2],
                                         threads, 1, 1, 0,
                                         ctypes.c_void_p(stream), arr, None),
                   "launch")


def pick_splits(rows, total, sms, slots):
    """The launch rule (docs/gpu.md "Attention"), from its one home,
    vortex.runtime.manifest.kv_splits (what the runtime launches with)."""
    from vortex.runtime.manifest import kv_splits
    return kv_splits(rows, total // rows if rows else 0, sms, slots)


class Attend:
    def __init__(self, drv, outdir):
        name = [f for f in os.listdir(outdir) if f.endswith(".manifest.json")]
        self.m = json.load(open(os.path.join(outdir, name[0])))
        art = self.m["artifacts"]
        self.drv = drv
        self.kernels = self.m["steps"]["attend"]["kernels"]
        self.funcs = []
        for k in self.kernels:
            # One cubin per kernel (--kernel-cache) or one for the flow.
            cubin = art["cubins"][k["kernel"]] if "cubins" in art \
                else art["cubin"]
            mod = drv.load(os.path.join(outdir, cubin))
            self.funcs.append(drv.func(mod, k["kernel"]))
        c = self.m["config"]
        self.bs, self.d, self.g = c["block_size"], c["head_dim"], c["group_size"]
        self.heads = self.m["tensors"]["q"]["shape"][1]
        self.t = self.heads // self.g
        self.kv = DT[c["kv_dtype"]]
        self.qdt = DT[self.m["tensors"]["q"]["dtype"]]
        self.scratch = {}
        for n, rec in self.m["tensors"].items():
            if rec["role"] == "scratch" and any(
                    n == p["name"] for k in self.kernels for p in k["params"]):
                numel = math.prod(int(x) for x in rec["shape"])
                self.scratch[n] = torch.empty(numel, dtype=torch.float32,
                                              device="cuda")
        self.slots = int(next(iter(self.scratch.values())).numel()
                         // (self.heads * self.d)) if self.scratch else 0
        self.regs = [drv.attr(f, 4) for f in self.funcs]  # NUM_REGS
        self.local = [drv.attr(f, 3) for f in self.funcs]  # LOCAL_SIZE
        self.occ = [drv.occupancy(f, k["block"][0])
                    for f, k in zip(self.funcs, self.kernels)]

    def prepare(self, tensors, splits):
        """The launches of one call: (function, grid, threads, params)."""
        rows = tensors["kv_last_len"].numel()
        out = []
        for f, k in zip(self.funcs, self.kernels):
            vals = []
            for p in k["params"]:
                if p["kind"] == "buffer":
                    t = tensors.get(p["name"])
                    if t is None:
                        t = self.scratch[p["name"]]
                    ptr = t.data_ptr()
                    vals += [ctypes.c_void_p(ptr), ctypes.c_void_p(ptr),
                             ctypes.c_int64(0), ctypes.c_int64(t.numel()),
                             ctypes.c_int64(1)]
                elif p["name"] == "kv_splits":
                    vals.append(ctypes.c_int32(splits))
                elif "value" in p:
                    vals.append(ctypes.c_int32(p["value"]))
                else:
                    vals.append(ctypes.c_int32(rows))
            kind = k["grid"]["kind"]
            if kind == "rows" and splits == 1:
                continue  # the combine: nothing to merge
            grid = (rows, splits if kind == "row_splits" else 1,
                    int(k["grid"].get("z", 1)))
            if rows:
                out.append((f, grid, k["block"][0], vals))
        return out

    def launch(self, prepared):
        for f, grid, threads, vals in prepared:
            self.drv.launch(f, grid, threads, vals)

    def run(self, tensors, splits):
        self.launch(self.prepare(tensors, splits))

    def graph(self, tensors, splits):
        """A CUDA graph of one call's launches."""
        prepared = self.prepare(tensors, splits)
        self.launch(prepared)  # warm up
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.launch(prepared)
        g._keep = prepared
        return g


def make_case(a, lens, num_blocks, seed=0):
    """Rows of the given token lengths; each row's blocks are distinct pool
    blocks in random order; every pool slot no row reads holds NaN."""
    torch.manual_seed(seed)
    bs, d, dev = a.bs, a.d, "cuda"
    rows = len(lens)
    nblk = [-(-n // bs) for n in lens]
    total = sum(nblk)
    assert total <= num_blocks
    perm = torch.randperm(num_blocks, device=dev)[:total].to(torch.int32)
    indptr = torch.zeros(rows + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(torch.tensor(nblk, dtype=torch.int32), 0)
    last = torch.tensor([n - (b - 1) * bs if b else bs
                         for n, b in zip(lens, nblk)], dtype=torch.int32)
    written = torch.zeros(num_blocks, bs, dtype=torch.bool, device=dev)
    # Full blocks: every block of a row but its last; then the last ones.
    full = torch.ones(total, dtype=torch.bool)
    lastpos = (indptr[1:] - 1)[torch.tensor(nblk) > 0].long()
    full[lastpos] = False
    written[perm[full.to(dev)].long()] = True
    for r in range(rows):
        if nblk[r]:
            written[perm[indptr[r + 1] - 1].long(), :last[r]] = True
    t = {"q": torch.randn(rows, a.heads, d, device=dev).to(a.qdt),
         "kv_indptr": indptr.to(dev), "kv_indices": perm,
         "kv_last_len": last.to(dev),
         "sm_scale": torch.tensor([1.0 / math.sqrt(d)], device=dev),
         "o": torch.full((rows, a.heads, d), float("nan"),
                         device=dev).to(a.qdt),
         "lse": torch.full((rows, a.heads), float("nan"), device=dev)}
    for name in ("k", "v"):
        x = torch.randn(num_blocks, bs, d, device=dev)
        x[~written] = float("nan")
        t[name] = x.to(a.kv)
        del x
    return t


def reference(a, t):
    q = t["q"].double().cpu()
    k = t["k"].double().cpu()
    v = t["v"].double().cpu()
    indptr, idx = t["kv_indptr"].cpu(), t["kv_indices"].cpu().long()
    last, scale = t["kv_last_len"].cpu(), float(t["sm_scale"][0])
    rows = q.shape[0]
    o = torch.zeros(rows, a.heads, a.d, dtype=torch.float64)
    lse = torch.full((rows, a.heads), -math.inf, dtype=torch.float64)
    for r in range(rows):
        ids = idx[indptr[r]:indptr[r + 1]]
        if len(ids) == 0:
            continue
        n = (len(ids) - 1) * a.bs + int(last[r])
        kk = k[ids].reshape(-1, a.d)[:n]
        vv = v[ids].reshape(-1, a.d)[:n]
        for h in range(a.heads):
            vis = n - (a.t - 1 - h // a.g)
            if vis <= 0:
                continue
            s = (kk[:vis] @ q[r, h]) * scale
            lse[r, h] = torch.logsumexp(s, 0)
            o[r, h] = torch.softmax(s, 0) @ vv[:vis]
    return o, lse


def check(a, lens, num_blocks, splits, seed):
    t = make_case(a, lens, num_blocks, seed=seed)
    a.run(t, splits)
    torch.cuda.synchronize()
    o, lse = reference(a, t)
    go, gl = t["o"].double().cpu(), t["lse"].double().cpu()
    fin = torch.isfinite(lse)
    ok = bool(torch.isfinite(go).all()) and bool(
        (gl[~fin] == -math.inf).all()) and bool((go[~fin] == 0).all())
    oerr = (go - o).abs().max().item() if go.numel() else 0.0
    lerr = (gl[fin] - lse[fin]).abs().max().item() if fin.any() else 0.0
    tol = 2e-2 if a.qdt == torch.bfloat16 else 1e-3
    ok = ok and oerr < tol and lerr < 1e-3
    return ok, oerr, lerr


def time_us(fn, flush, reps=20):
    times = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    times.sort()
    return times[len(times) // 2]


def bench(variants, sms):
    """Times each variant's launches, replayed from a CUDA graph with L2
    flushed before each replay, against selected K+V bytes / copy
    bandwidth (the same flush and median for the copy)."""
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    cp = time_us(lambda: dst.copy_(src), flush, 10)
    bw = 2 * src.numel() / (cp * 1e-6)
    del src, dst
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s (1 GiB copy {cp:.0f} us, "
          "read + write bytes)")
    shapes = ((64, 128), (8, 128), (1, 128), (64, 2048), (8, 2048),
              (1, 2048))
    for vi, (name, a) in enumerate(variants):
        for reqs, blocks in shapes if vi == 0 else shapes[:3]:
            rows = reqs * 8
            lens = [blocks * a.bs] * rows
            t = make_case(a, lens, rows * blocks, seed=1)
            kvbytes = 2 * rows * blocks * a.bs * a.d * t["k"].element_size()
            floor = kvbytes / bw * 1e6
            rule = pick_splits(rows, rows * blocks, sms, a.slots)
            tries = {1, rule} if vi else {1, rule, 2 * rule,
                                           max(1, rule // 2)}
            for splits in sorted(x for x in tries
                                 if x == 1 or x * rows <= a.slots):
                g = a.graph(t, splits)
                us = time_us(g.replay, flush, 30)
                mark = "*" if splits == rule else " "
                print(f"  {name:26s} B={reqs:3d} rows={rows:4d} blocks="
                      f"{blocks:5d} splits={splits:2d}{mark}: {us:8.1f} us,"
                      f" floor {floor:7.1f} us, {us / floor:.2f}x")
                del g
            del t
            torch.cuda.empty_cache()


def main():
    args = sys.argv[1:]
    bench_dir = None
    if "--bench" in args:
        i = args.index("--bench")
        bench_dir = args[i + 1]
        del args[i:i + 2]
    torch.cuda.init()
    torch.empty(1, device="cuda")
    drv = Driver()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(torch.cuda.get_device_name(0), "SMs", sms)
    failed = 0
    for d in args:
        a = Attend(drv, d)
        print(f"{os.path.basename(d)}: heads {a.heads} (T {a.t}), regs "
              f"{a.regs}, local {a.local}, occupancy {a.occ}")
        bs = a.bs
        cases = [
            ([1, bs, bs + 1, 5 * bs - 3, 0, 37 * bs + 2, 3], 256),
            ([0, 0, 1], 8),
            ([a.t, 2, 700 * bs // 16 + 5], 1024),
        ]
        for lens, nb in cases:
            for splits in (1, 3, 8, 33):
                ok, oe, le = check(a, lens, nb, splits, seed=len(lens) + splits)
                failed += not ok
                print(f"  lens {lens} splits {splits}: "
                      f"{'ok' if ok else 'FAIL'} (o err {oe:.2e}, "
                      f"lse err {le:.2e})")
    if bench_dir:
        variants = []
        for d in bench_dir.split(","):
            a = Attend(drv, d)
            print(f"bench {os.path.basename(d)}: regs {a.regs}, local "
                  f"{a.local}, occupancy {a.occ}")
            variants.append((d.replace("att_bs16_", "").rstrip("/"), a))
        bench(variants, sms)
    print("FAILED" if failed else "ALL OK", failed)


if __name__ == "__main__":
    main()
