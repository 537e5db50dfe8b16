# RUN: %python %s
# REQUIRES: torch, numpy
#
# Packed int4 k/v (FlowConfig(kv_dtype="int4"), docs/contract.md "INT4 KV")
# on the CPU back end and in eager mode, against an independent float64
# reference:
# * vortex.int4's helpers: pack/unpack invert each other; quantize_block's
#   levels and scales are those of the spec computed here in float64
#   (amax / 7 clamped at 1e-8, round half away from zero, clamp to +-7),
#   the rounding checked at exact halves;
# * the compiled cache step over an int4 pool (gqa_quest_sparse_attention
#   and block_sparse_attention at G 8 / D 128 / blocks of 16 and G 5 / D 80
#   / blocks of 8, f32 intermediates): the pool is quantized with
#   vortex.int4, dequantized in float64, and the float64 reference flow
#   (vortex.semantics.reference) summarizes it; fields agree to rtol = atol
#   = 1e-5 (the dequantized value is one f32 product, so the difference is
#   the f32 reductions' rounding), blocks outside block_ids stay untouched,
#   negative ids are skipped; the indexer's selection matches the
#   reference's up to ties; eager mode (which dequantizes with the same
#   formula) agrees with the reference to the same tolerance and selects
#   the same blocks up to ties;
# * attend (a CSR of whole blocks and a partial last one) and decode over
#   the int4 pool, with NaN scales where no row looks: o and lse equal
#   float64 attention over the dequantized pool to rtol = atol = 1e-5,
#   decode's selection the reference's up to ties, eager decode the same;
# * bad arguments raise a ValueError naming the argument and write nothing;
#   the engine adapters refuse an int4 flow with NotImplementedError.

import os
import sys

import numpy as np
import torch

import vortex
from vortex import api, flows, int4, testing
from vortex.semantics import eager
from vortex.semantics import reference as ref
from vortex.semantics import reference_attention as ref_attn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from engine_refusal import check_engines_refuse  # noqa: E402

tally = testing.Tally()
rng = np.random.default_rng(4)

# -- helpers -----------------------------------------------------------------
nib = rng.integers(0, 15, size=(3, 16, 80))
packed = int4.pack(nib)
tally(packed.shape == (3, 16, 40) and packed.dtype == np.uint8
      and (packed[..., 0] == (nib[..., 0] | nib[..., 1] << 4)).all()
      and (int4.unpack(packed) == nib).all(),
      "pack: even channel low nibble, odd high; unpack inverts it")

x = rng.standard_normal((2, 16, 80)) * 3.0
for per_channel in (True, False):
    q, s = int4.quantize_block(x, per_channel)
    axis = -2 if per_channel else -1
    want_s = np.maximum(np.abs(x).max(axis=axis, keepdims=True) / 7.0, 1e-8)
    ratio = x / want_s.astype(np.float32).astype(np.float64)
    lv = np.clip(np.sign(ratio) * np.floor(np.abs(ratio) + 0.5), -7, 7)
    got = int4.unpack(q).astype(np.int64) - 7
    deq = int4.dequantize_block(q, s)
    tally(s.dtype == np.float32 and s.shape == (
        (2, 1, 80) if per_channel else (2, 16, 1))
          and np.allclose(s, want_s, rtol=1e-7, atol=0)
          and (got == lv).all()
          and np.abs(deq - x).max() <= 0.5 * want_s.max() * (1 + 1e-6),
          f"quantize_block(per_channel={per_channel}): scale amax/7, levels "
          "round(x / scale) clamped to +-7, error <= scale / 2")

# Halves round away from zero: with amax 7 the scale is 1.
halves = np.array([[7.0, 2.5, -2.5, 0.5, -0.5, -7.0]])
q, s = int4.quantize_block(halves, per_channel=False)
tally((int4.unpack(q)[0].astype(int) - 7).tolist() == [7, 3, -3, 1, -1, -7],
      "rounding is half away from zero", int4.unpack(q))
q, s = int4.quantize_block(np.zeros((4, 8)), per_channel=True)
tally((s == np.float32(1e-8)).all() and (int4.unpack(q) == 7).all(),
      "an all-zero block: scale 1e-8, every nibble 7")
for bad, what in ((np.zeros((4, 7)), "odd head_dim"),
                  (np.full((4, 8), np.nan), "NaN")):
    try:
        int4.quantize_block(bad, per_channel=True)
        tally(False, f"quantize_block refuses {what}")
    except ValueError as err:
        tally("x:" in str(err), f"quantize_block refuses {what}", err)

# -- the compiled cache step and indexer ------------------------------------
LENGTHS = (1, 3, 9, 17)


def make_cache(flow, seed):
    r = np.random.default_rng(seed)
    cfg = flow.config
    bs, d = int(cfg["block_size"]), int(cfg["head_dim"])
    total = sum(LENGTHS)
    nb = total + 5
    kf = r.standard_normal((nb, bs, d))
    vf = r.standard_normal((nb, bs, d)) * 2.0
    cache = {n: torch.from_numpy(a) for n, a in int4.quantize_pool(kf, vf)
             .items()}
    for n, rows, cols in flow.manifest.fields:
        cache[n] = torch.from_numpy(
            r.standard_normal((nb, rows, cols)).astype(np.float32))
    perm = r.permutation(nb).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(LENGTHS)]).astype(np.int32)
    return cache, perm[:total].copy(), perm[total:].copy(), indptr, r


def reference_of(cache):
    want = {n: t.numpy().astype(np.float64) for n, t in cache.items()}
    want["k"], want["v"] = int4.dequantize_pool(
        {n: t.numpy() for n, t in cache.items()})
    return want


def clone(cache):
    return {n: t.clone() for n, t in cache.items()}


for name in ("gqa_quest_sparse_attention", "block_sparse_attention"):
    shipped = flows.SHIPPED[name]
    for g, d, bs in ((8, 128, 16), (5, 80, 8)):
        tag = f"{name} int4 G {g} D {d} blocks of {bs}"
        try:
            path = api.compile_vflow(
                shipped.flow, shipped.config, "cpu", name=shipped.symbol,
                head_dim=d, group_size=g, block_size=bs, page_size=bs,
                kv_dtype="int4", intermediate_dtype="f32")
            flow = vortex.load(path)
        except Exception as err:  # noqa: BLE001
            tally(False, f"{tag}: trace, compile, load",
                  f"{type(err).__name__}: {err}")
            continue
        m = flow.manifest
        tally(m.tensors["k"].dtype == "u8"
              and [x.symbol or x.const for x in m.tensors["k"].shape] ==
              ["num_blocks", bs, d // 2]
              and m.tensors["k_int4_scale"].dtype == "f32"
              and [x.symbol or x.const for x in
                   m.tensors["v_int4_scale"].shape] == ["num_blocks", bs, 1]
              and all(list(m.steps[st].args[-2:]) == ["k_int4_scale",
                                                      "v_int4_scale"]
                      for st in ("cache", "indexer", "attend")),
              f"{tag}: manifest (k u8 [num_blocks, {bs}, {d // 2}], scales "
              "last in every step)")
        names = [n for n, _, _ in m.fields]
        cfg = ref.Config.from_dict(flow.config)
        flow_ref = ref.FLOWS[flow.name]
        cache, ids, spare, indptr, r = make_cache(flow, 7 + g)
        want = reference_of(cache)
        before = clone(cache)
        eager_cache = clone(cache)

        mixed = np.concatenate([ids, [-1, -3]]).astype(np.int32)
        r.shuffle(mixed)
        flow.cache_step(cache, torch.from_numpy(mixed))
        flow_ref.cache_step(want, ids, cfg)
        probs = ref.compare_fields({n: cache[n].numpy() for n in names},
                                   want, names)
        moved = [n for n in names if not torch.equal(
            before[n][spare], cache[n][spare])]
        pools = [n for n in ("k", "v", "k_int4_scale", "v_int4_scale")
                 if not torch.equal(before[n], cache[n])]
        tally(not probs and not moved and not pools,
              f"{tag}: cache step = float64 reference (rtol = atol = 1e-5), "
              "spare blocks and the pool untouched",
              "; ".join(probs[:4] + moved + pools))

        eflow, _ = eager.flow_for(flow.name, flow.config)
        eager.cache_step(eflow, eager_cache, torch.from_numpy(mixed),
                         flow.config)
        probs = ref.compare_fields(
            {n: eager_cache[n].numpy() for n in names}, want, names)
        tally(not probs, f"{tag}: eager cache step = float64 reference",
              "; ".join(probs[:4]))

        q = r.standard_normal((len(LENGTHS), g, d)).astype(np.float32)
        sp, si = flow.indexer(torch.from_numpy(q), cache,
                              torch.from_numpy(indptr), torch.from_numpy(ids))
        w = flow_ref.indexer(q.astype(np.float64), want, indptr, ids, cfg)
        probs = ref.compare_selection(sp.numpy(), si.numpy(), w, indptr, ids,
                                      cfg)
        tally(not probs, f"{tag}: indexer selection = reference's",
              "; ".join(probs[:4]))
        _, esp, esi = eager.indexer(eflow, torch.from_numpy(q), eager_cache,
                                    torch.from_numpy(indptr),
                                    torch.from_numpy(ids), flow.config)
        probs = ref.compare_selection(esp.numpy(), esi.numpy(), w, indptr,
                                      ids, cfg)
        tally(not probs, f"{tag}: eager indexer selection = reference's",
              "; ".join(probs[:4]))

        # Bad pools and scales: a ValueError naming the argument, nothing
        # written.
        bs_, half = int(flow.config["block_size"]), d // 2
        nb = cache["k"].shape[0]
        bad_cases = [
            ("k", torch.zeros(nb, bs_, d, dtype=torch.float32)),
            ("k", torch.zeros(nb, bs_, d, dtype=torch.uint8)),
            ("v", torch.zeros(nb, bs_, half, dtype=torch.int8)),
            ("k_int4_scale", torch.zeros(nb, bs_, d, dtype=torch.float32)),
            ("v_int4_scale", torch.zeros(nb, bs_, 1, dtype=torch.float64)),
            ("v_int4_scale", None),
        ]
        for arg, value in bad_cases:
            bad = clone(cache)
            if value is None:
                del bad[arg]
            else:
                bad[arg] = value
            snap = clone(bad)
            what = ("missing" if value is None else
                    f"{tuple(value.shape)} {value.dtype}")
            try:
                flow.cache_step(bad, torch.from_numpy(ids))
                tally(False, f"{tag}: cache[{arg!r}] {what} is refused")
            except ValueError as err:
                same = all(torch.equal(snap[n], bad[n]) for n in names)
                tally(arg in str(err) and same,
                      f"{tag}: cache[{arg!r}] {what}: ValueError naming it, "
                      "nothing written", err)

        # attend over a CSR of whole and partial blocks, and decode: against
        # float64 attention over the dequantized pool. What no row sees is
        # poisoned first: NaN scales in the spare blocks and in the v
        # scales past each row's kv_last_len (selects keep them out).
        last = torch.from_numpy(r.integers(1, bs + 1, len(LENGTHS))
                                .astype(np.int32))
        for scale in ("k_int4_scale", "v_int4_scale"):
            cache[scale][torch.from_numpy(spare).long()] = float("nan")
        for row, n in enumerate(last.tolist()):
            tail = int(ids[indptr[row + 1] - 1])
            cache["v_int4_scale"][tail, n:] = float("nan")
        qt = torch.from_numpy(q)
        o, lse = flow.attend(qt, cache, torch.from_numpy(indptr),
                             torch.from_numpy(ids), last)
        wo, wl = ref_attn.attend(q, want["k"], want["v"], indptr, ids,
                                 last.numpy(), g)
        tally(np.allclose(o.numpy(), wo, rtol=1e-5, atol=1e-5)
              and np.allclose(lse.numpy(), wl, rtol=1e-5, atol=1e-5),
              f"{tag}: attend = float64 attention over the dequantized pool "
              "(rtol = atol = 1e-5)",
              f"max |o - ref| {np.abs(o.numpy() - wo).max():.3g}")
        o, lse, dsp, dsi = flow.decode(qt, cache, torch.from_numpy(indptr),
                                       torch.from_numpy(ids), last)
        wo, wl = ref_attn.attend(q, want["k"], want["v"], dsp.numpy(),
                                 dsi.numpy(), last.numpy(), g)
        probs = ref.compare_selection(dsp.numpy(), dsi.numpy(), w, indptr,
                                      ids, cfg)
        tally(not probs and np.allclose(o.numpy(), wo, rtol=1e-5, atol=1e-5)
              and np.allclose(lse.numpy(), wl, rtol=1e-5, atol=1e-5),
              f"{tag}: decode = the reference's selection, then float64 "
              "attention over it (rtol = atol = 1e-5)", "; ".join(probs[:4]))
        eo, _, _, _, _ = eager.decode(
            eflow, qt, eager_cache, torch.from_numpy(indptr),
            torch.from_numpy(ids), last, flow.config)
        tally(np.allclose(eo.numpy(), wo, rtol=1e-5, atol=1e-5),
              f"{tag}: eager decode = the same float64 attention")

# The engine adapters page float per-head k/v: an int4 flow is refused by
# name, before anything is allocated.
check_engines_refuse(flow, "an int4 flow", "int4", tally)

# FlowConfig: int4 is a kv_dtype with an even head_dim, not MLA.
for knobs, what in (({"kv_dtype": "int4", "head_dim": 81}, "head_dim"),
                    ({"intermediate_dtype": "int4"}, "intermediate_dtype"),
                    ({"kv_dtype": "int4", "head_dim": 576, "kv_lora_rank": 512,
                      "rope_dim": 64}, "MLA")):
    try:
        vortex.FlowConfig(**knobs)
        tally(False, f"FlowConfig refuses {knobs}")
    except ValueError as err:
        tally(what in str(err), f"FlowConfig refuses {what} with int4", err)
tally(vortex.FlowConfig(kv_dtype="int4").query_dtype == "bf16",
      "FlowConfig(kv_dtype='int4'): q defaults to bf16")
tally.exit(summary=True)
