#!/usr/bin/env python3
"""The attend and decode torch ops on CUDA through the runtime (issue 35):
`flow.attend` and `flow.decode` of a GPU build (vortex-compile --target=sm_90)
against eager.attend / eager.decode in float64, the float64 numpy reference
(vortex.semantics.reference_attention) and the CPU build's ops, on rows of 0, 1 and
many blocks with partial last blocks and NaN in every pool slot no row's
length covers; then under torch.compile(fullgraph=True) and replayed from
one captured CUDA graph (outputs zeroed before the replay).

  attend_runtime_check.py DIR NAME [NAME...]

DIR holds NAME_gpu/ and NAME_cpu/ (vortex-compile outputs). Run it once with
the native launcher and once with VORTEX_NATIVE=0 (the ctypes path).
"""
import os
import sys
import time

import numpy as np
import torch

import vortex
from vortex.semantics import eager
from vortex.runtime import native
from vortex.runtime.manifest import selected_count
from vortex.semantics.reference_attention import attend as reference_attend
from vortex.testing.attention import make_case

failures = []


def report(ok, what, detail=""):
    print(("PASS " if ok else "FAIL ") + what + (f"  [{detail}]" if detail
                                                  else ""), flush=True)
    if not ok:
        failures.append(what)


def err(a, b, mask=None):
    a, b = a.double().cpu(), b.double().cpu()
    if mask is not None:
        a, b = a[mask], b[mask]
    return (a - b).abs().max().item() if a.numel() else 0.0


def lse_ok(got, ref):
    got, ref = got.double().cpu(), ref.double().cpu()
    none = torch.isneginf(ref)
    return bool((torch.isneginf(got) == none).all()), err(got, ref, ~none)


QUICK = os.environ.get("QUICK", "") not in ("", "0")


def cdt(m, name):
    return getattr(torch, m.tensors[name].torch_dtype.split(".")[1])


def run(root, name):
    dev = torch.device("cuda")
    gpu = vortex.load(os.path.join(root, name + "_gpu",
                                   name + ".manifest.json"))
    cpu = vortex.load(os.path.join(root, name + "_cpu",
                                   name + ".manifest.json"))
    m = gpu.manifest
    cfg = m.config
    bs, D, G = (int(cfg["block_size"]), int(cfg["head_dim"]),
                int(cfg["group_size"]))
    heads = m.tensors["q"].extents({"rows": 1})[1]
    impl = gpu._attend.cuda_impl
    print(f"== {name}: block {bs}, D {D}, G {G}, heads {heads}, kv "
          f"{m.tensors['k'].dtype}, q {m.tensors['q'].dtype}, cuda impl "
          f"{impl}, native: {native.unavailable_reason() or 'loaded'}",
          flush=True)
    qdt = getattr(torch, m.tensors["q"].torch_dtype.split(".")[1])
    kvdt = getattr(torch, m.tensors["k"].torch_dtype.split(".")[1])
    tol_o = 2e-2 if qdt == torch.bfloat16 else 2e-3
    rng = np.random.default_rng(11)
    cases = [("8 rows (splits)", [0, 1, 5, 40, 300, 130, 17, 64]),
             ("3 rows, long (splits)", [2048, 1, 700]),
             ("512 rows (one split)", list(rng.integers(0, 24, 512)))]
    att_c = torch.compile(lambda *a: gpu.attend(*a), fullgraph=True)
    dec_c = torch.compile(lambda *a: gpu.decode(*a), fullgraph=True)
    for ci, (label, blocks) in enumerate(cases[:2] if QUICK else cases):
        q, k, v, indptr, ids, last = make_case(rng, blocks, bs, D, heads)
        # bf16 rounding first, so that every side sees the same values.
        qg = torch.from_numpy(q).to(dev, qdt)
        kg = torch.from_numpy(k).to(dev, kvdt)
        vg = torch.from_numpy(v).to(dev, kvdt)
        q64, k64, v64 = (x.double().cpu().numpy() for x in (qg, kg, vg))
        ip = torch.from_numpy(indptr).to(dev)
        ix = torch.from_numpy(ids).to(dev)
        ll = torch.from_numpy(last).to(dev)
        rows, total = len(blocks), int(indptr[-1])
        splits = gpu.runtime.kv_splits(rows, total // max(rows, 1))
        cache = gpu.allocate_cache(k.shape[0])
        cache["k"].copy_(torch.nan_to_num(kg, nan=0.0))
        cache["v"].copy_(torch.nan_to_num(vg, nan=0.0))
        full = [int(ids[e]) for r in range(rows)
                for e in range(indptr[r], indptr[r + 1])
                if e + 1 < indptr[r + 1] or last[r] == bs]
        gpu.cache_step(cache, torch.tensor(full, dtype=torch.int32,
                                           device=dev))
        cache["k"].copy_(kg)        # NaN past every row's length again
        cache["v"].copy_(vg)
        cm = cpu.manifest
        ccache = {n: t.cpu().to(cdt(cm, n)) for n, t in cache.items()}
        qc = qg.cpu().to(cdt(cm, "q"))

        # -- attend over the dense CSR ------------------------------------
        o = torch.full_like(qg, float("nan"))
        lse = torch.full(qg.shape[:2], float("nan"), device=dev)
        torch.cuda.synchronize()
        gpu.attend(qg, cache, ip, ix, ll, o=o, lse=lse)
        torch.cuda.synchronize()
        o_ref, lse_ref = reference_attend(q64, k64, v64, indptr, ids, last,
                                          G, None)
        o_ref, lse_ref = torch.from_numpy(o_ref), torch.from_numpy(lse_ref)
        same_inf, le = lse_ok(lse, lse_ref)
        oe = err(o, o_ref)
        report(bool(torch.isfinite(o).all()) and same_inf and oe < tol_o
               and le < 1e-3,
               f"{name} {label}: attend (kv_splits {splits}) vs float64 "
               "reference", f"o {oe:.2e}, lse {le:.2e}")
        oe_e, lse_e = eager.attend(qg.double(), kg.double(), vg.double(), ip,
                                   ix, ll, G)
        same_inf, le = lse_ok(lse, lse_e)
        oe = err(o, oe_e)
        report(same_inf and oe < tol_o and le < 1e-3,
               f"{name} {label}: attend vs eager.attend (float64)",
               f"o {oe:.2e}, lse {le:.2e}")
        oc, lc = cpu.attend(qc, ccache, ip.cpu(), ix.cpu(), ll.cpu())
        same_inf, le = lse_ok(lse, lc)
        oe = err(o, oc)
        report(same_inf and oe < tol_o and le < 1e-3,
               f"{name} {label}: attend vs the CPU build's attend",
               f"o {oe:.2e}, lse {le:.2e}")

        # -- decode: the indexer, then attend over its selection ----------
        before = {n: t.clone() for n, t in cache.items()}
        od, ld, sp_ip, sp_ix = gpu.decode(qg, cache, ip, ix, ll)
        torch.cuda.synchronize()
        cod, cld, csp_ip, csp_ix = cpu.decode(qc, ccache, ip.cpu(),
                                              ix.cpu(), ll.cpu())
        n_sel = int(sp_ip[-1])
        dsplits = gpu.runtime.kv_splits(
            rows, selected_count(cfg, total // max(rows, 1)))
        same_sel = torch.equal(sp_ip.cpu(), csp_ip) and torch.equal(
            sp_ix.cpu()[:n_sel], csp_ix[:n_sel])
        report(same_sel, f"{name} {label}: decode selects what the CPU "
               f"build selects ({n_sel} of {total} blocks kept)")
        sel_ip, sel_ix = sp_ip.cpu().numpy(), sp_ix.cpu().numpy()
        o_ref, lse_ref = reference_attend(q64, k64, v64, sel_ip, sel_ix,
                                          last, G, None)
        o_ref, lse_ref = torch.from_numpy(o_ref), torch.from_numpy(lse_ref)
        same_inf, le = lse_ok(ld, lse_ref)
        oe = err(od, o_ref)
        report(bool(torch.isfinite(od).all()) and same_inf and oe < tol_o
               and le < 1e-3,
               f"{name} {label}: decode vs float64 reference over its "
               f"selection (kv_splits {dsplits})", f"o {oe:.2e}, lse "
               f"{le:.2e}")
        same_inf, le = lse_ok(ld, cld)
        oe = err(od, cod)
        report(same_inf and oe < tol_o and le < 1e-3,
               f"{name} {label}: decode vs the CPU build's decode",
               f"o {oe:.2e}, lse {le:.2e}")
        eflow, _ = eager.flow_for(name, cfg)
        ecache = {n: t.double() for n, t in before.items()}
        eo, el, _, e_ip, e_ix = eager.decode(eflow, qg.double(), ecache, ip,
                                             ix, ll, cfg)
        same_sel = torch.equal(e_ip.cpu(), sp_ip.cpu()) and torch.equal(
            e_ix.cpu()[:n_sel], sp_ix.cpu()[:n_sel])
        same_inf, le = lse_ok(ld, el)
        oe = err(od, eo)
        report(same_sel and same_inf and oe < tol_o and le < 1e-3,
               f"{name} {label}: decode vs eager.decode (float64)",
               f"same selection {same_sel}, o {oe:.2e}, lse {le:.2e}")

        # -- torch.compile(fullgraph=True) (the first case) -----------------
        if ci == 0 and not QUICK:
            o2, l2 = att_c(qg, cache, ip, ix, ll)
            od2, ld2, ip2, ix2 = dec_c(qg, cache, ip, ix, ll)
            torch.cuda.synchronize()
        report(ci > 0 or QUICK or torch.equal(o2, o) and torch.equal(l2, lse) and
               torch.equal(od2, od) and torch.equal(ld2, ld) and
               torch.equal(ip2, sp_ip) and torch.equal(ix2[:n_sel],
                                                       sp_ix[:n_sel]),
               f"{name} {label}: torch.compile(fullgraph=True) of attend "
               "and decode equals the eager calls")

        # -- one CUDA graph: attend then decode, replayed ------------------
        go, gl = torch.zeros_like(o), torch.zeros_like(lse)
        gdo, gdl = torch.zeros_like(od), torch.zeros_like(ld)
        gip, gix = torch.zeros_like(ip), torch.zeros_like(ix)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):          # warm-up (plans cached)
            gpu.attend(qg, cache, ip, ix, ll, o=go, lse=gl)
            gpu.decode(qg, cache, ip, ix, ll, gip, gix, o=gdo, lse=gdl)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            gpu.attend(qg, cache, ip, ix, ll, o=go, lse=gl)
            gpu.decode(qg, cache, ip, ix, ll, gip, gix, o=gdo, lse=gdl)
        for t in (go, gl, gdo, gdl, gip, gix):
            t.zero_()
        graph.replay()
        torch.cuda.synchronize()
        report(torch.equal(go, o) and torch.equal(gl, lse) and
               torch.equal(gdo, od) and torch.equal(gdl, ld) and
               torch.equal(gip, sp_ip) and torch.equal(gix[:n_sel],
                                                       sp_ix[:n_sel]),
               f"{name} {label}: one CUDA graph (attend + decode) replays "
               "the same o, lse and selection")
        # A replay's time (host-free), for the record only.
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            graph.replay()
        torch.cuda.synchronize()
        print(f"   graph replay (attend + decode): "
              f"{(time.perf_counter() - t0) / 20 * 1e6:.1f} us "
              f"(rows {rows}, kv_splits attend {splits})", flush=True)
        del graph
    gpu.check()
    report(True, f"{name}: no guard tripped")


def main():
    root, names = sys.argv[1], sys.argv[2:]
    print(torch.cuda.get_device_name(0), "SMs",
          torch.cuda.get_device_properties(0).multi_processor_count,
          "torch", torch.__version__, "VORTEX_NATIVE",
          os.environ.get("VORTEX_NATIVE", "(default)"), flush=True)
    for n in names:
        try:
            run(root, n)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            report(False, f"{n}: raised {type(e).__name__}: {e}")
    print("FAILED " + str(len(failures)) if failures else "ALL OK",
          flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
