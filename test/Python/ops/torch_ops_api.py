# RUN: %python %s
# REQUIRES: torch, numpy
#
# The torch-op API of compiled flows on the CPU impl (vortex.load):
#   - op names: `vortex::<flow>_<source_hash[:12]>_{indexer,cache}` for every
#     shipped flow, the same in another process that compiles the flows
#     afresh (its own compile cache) and loads them;
#   - schemas: exactly the tensors a step writes are mutable (Tensor(x!)),
#     k and v never; running_avg_block_sparse: indexer {running_score,
#     sparse_kv_indptr, sparse_kv_indices}, cache step {centroids,
#     running_score}; the ops return nothing;
#   - loading a manifest again (or a copy of it elsewhere) reuses the ops;
#   - the output-buffer form: caller-owned sparse_kv_indptr and a
#     sparse_kv_indices longer than total: the returned tensors are (views
#     of) the caller's buffers, the first `total` entries hold the op's
#     result (as the allocated form), the tail is untouched; also under
#     torch.compile(fullgraph=True);
#   - the loc form: block_ids_from_loc against hand-computed block ids for
#     page_size == block_size, page_size > block_size (block_sparse_attention
#     with page_size = 64 edited into its config: vortex-opt
#     --vortex-set-config has no page-size knob) and block_size 1 (token
#     flows), with negative / -1 slots and tokens that complete no block;
#     cache_step(loc=) equals cache_step(block_ids=<the completed blocks>),
#     and a loc that completes no block writes nothing;
#   - negative block ids are skipped by the cache step (all of them or
#     mixed in), an empty block_ids writes nothing.

import json
import os
import subprocess
import sys
import tempfile

import torch

import vortex
from vortex.runtime import ops
from vortex.testing import torch_checks as tt
from vortex.testing import Tally

tally = Tally()


def run(what, fn):
    try:
        ok, detail = fn()
    except Exception as err:  # noqa: BLE001
        ok, detail = False, f"{type(err).__name__}: {err}"
    tally(ok, what, detail)


def mutable_args(op):
    return [a.name for a in op._schema.arguments
            if a.alias_info is not None and a.alias_info.is_write]


# -- op names, stable across processes ----------------------------------------
flows = {n: tt.load_flow(n) for n in tt.SHIPPED_FLOWS}


def names_here():
    return {n: [f.indexer_op._schema.name, f.cache_op._schema.name]
            for n, f in flows.items()}


for n, f in flows.items():
    h = f.manifest.source_hash
    want = [f"vortex::{n}_{h[:12]}_indexer", f"vortex::{n}_{h[:12]}_cache"]
    got = [f.indexer_op._schema.name, f.cache_op._schema.name]
    tally(got == want and len(h) == 64 and all(c in "0123456789abcdef"
                                               for c in h)
          and f.indexer_op._schema.overload_name == ""
          and f.indexer_op is getattr(torch.ops.vortex,
                                      want[0].split("::")[1]).default,
          f"{n}: ops {got}", f"expected {want} (source_hash {h!r})")

CHILD = r"""
import json, sys, vortex
from vortex.testing import torch_checks as tt
out = {}
for n in tt.SHIPPED_FLOWS:
    f = vortex.load(vortex.compile(tt.example_path(n), target="cpu"))
    out[n] = [f.indexer_op._schema.name, f.cache_op._schema.name,
              f.manifest.base_dir]
print(json.dumps(out))
"""


def other_process():
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, VORTEX_CACHE_DIR=d)
        proc = subprocess.run([sys.executable, "-c", CHILD], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, check=False)
    if proc.returncode:
        return False, proc.stderr[-2000:]
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    here = names_here()
    diff = {n: (here[n], child.get(n, [None, None])[:2]) for n in here
            if child.get(n, [None, None])[:2] != here[n]}
    fresh = all(not v[2].startswith(os.path.dirname(
        flows[n].manifest.base_dir)) for n, v in child.items())
    return not diff and fresh and len(child) == len(here), (
        f"differ: {diff}" if diff else "the child did not compile afresh")


run("op names are the same in another process that compiles afresh",
    other_process)

# -- schemas: exactly the written tensors are mutable -------------------------
ra = flows["running_avg_block_sparse"]
run("running_avg indexer schema: mutable = running_score, sparse_kv_indptr, "
    "sparse_kv_indices",
    lambda: (mutable_args(ra.indexer_op) == ["running_score",
                                             "sparse_kv_indptr",
                                             "sparse_kv_indices"],
             str(ra.indexer_op._schema)))
run("running_avg cache schema: mutable = centroids, running_score",
    lambda: (mutable_args(ra.cache_op) == ["centroids", "running_score"],
             str(ra.cache_op._schema)))
for n, f in flows.items():
    m = f.manifest
    for step, op in (("indexer", f.indexer_op), ("cache", f.cache_op)):
        s = op._schema
        args = [a.name for a in s.arguments]
        mut = mutable_args(op)
        ok = (args == list(m.steps[step].args)
              and sorted(mut) == sorted(m.steps[step].writes)
              and "k" not in mut and "v" not in mut and not s.returns
              and all(str(a.type) == "Tensor" for a in s.arguments))
        if step == "indexer":
            ok = ok and {"sparse_kv_indptr", "sparse_kv_indices"} <= set(mut)
        else:
            ok = ok and "block_ids" not in mut and all(
                w in m.cache_names() for w in mut)
        tally(ok, f"{n} {step} schema: mutable {mut}", str(s))

# -- loading again reuses the ops ---------------------------------------------
path = vortex.compile(tt.example_path("running_avg_block_sparse"), "cpu")


def reload_reuses():
    before = dict(ops.registered_ops())
    a = vortex.load(path)
    b = vortex.load(path)
    probs = []
    if not (a.indexer_op is b.indexer_op is ra.indexer_op
            and a.cache_op is b.cache_op is ra.cache_op):
        probs.append("different op objects")
    if ops.registered_ops() != before:
        probs.append(f"registered ops changed: {before} -> "
                     f"{ops.registered_ops()}")
    # A copy of the artifacts elsewhere: same source hash, same ops.
    with tempfile.TemporaryDirectory() as d:
        import shutil
        for name in os.listdir(os.path.dirname(path)):
            shutil.copy(os.path.join(os.path.dirname(path), name), d)
        c = vortex.load(os.path.join(d, os.path.basename(path)))
        if c.indexer_op is not ra.indexer_op or c.cache_op is not ra.cache_op:
            probs.append("a copy of the manifest defined other ops")
        # Every Flow object still runs (the op runs the latest CPU build).
        p = tt.make_problem(ra, (40, 0, 3), seed=3)
        ra.cache_step(p.cache, p.indices)
        res = []
        for fl in (ra, a, c):
            cache = tt.clone_cache(p.cache)
            res.append(fl.indexer(p.q, cache, p.indptr, p.indices) + (cache,))
        for r in res[1:]:
            if not (torch.equal(r[0], res[0][0]) and torch.equal(r[1],
                                                                 res[0][1])
                    and not tt.same_tensors(r[2], res[0][2])):
                probs.append("flows of one manifest disagree")
    if ops.registered_ops() != before:
        probs.append("registered ops changed after loading a copy")
    return not probs, "; ".join(probs)


run("loading a manifest twice (and a copy of it) reuses the ops",
    reload_reuses)

# -- the output-buffer form ---------------------------------------------------
TAIL = 9


def output_buffers(f, seed):
    p = tt.make_problem(f, (40, 0, 1, 33, 70, 3), seed=seed)
    f.cache_step(p.cache, p.indices)
    rows, total = p.q.shape[0], p.indices.shape[0]
    probs = []
    ca, cb = tt.clone_cache(p.cache), tt.clone_cache(p.cache)
    sp_a, si_a = f.indexer(p.q, ca, p.indptr, p.indices)
    sp_buf = torch.full((rows + 1,), -3, dtype=torch.int32)
    si_buf = torch.full((total + TAIL,), -5, dtype=torch.int32)
    sp_b, si_b = f.indexer(p.q, cb, p.indptr, p.indices, sp_buf, si_buf)
    end = int(sp_a[-1])
    if sp_b is not sp_buf:
        probs.append("sparse_kv_indptr returned is not the caller's buffer")
    if si_b.data_ptr() != si_buf.data_ptr() or si_b.shape != (total,):
        probs.append(f"sparse_kv_indices returned is not the first total = "
                     f"{total} entries of the caller's buffer "
                     f"({tuple(si_b.shape)})")
    if not torch.equal(sp_buf, sp_a):
        probs.append(f"sparse_kv_indptr {sp_buf.tolist()} != allocated form "
                     f"{sp_a.tolist()}")
    if not torch.equal(si_buf[:end], si_a[:end]):
        probs.append("the selected indices differ from the allocated form")
    if not (si_buf[total:] == -5).all():
        probs.append(f"the tail past total was written: "
                     f"{si_buf[total:].tolist()}")
    diff = tt.same_tensors(ca, cb)
    if diff:
        probs.append(f"cache tensors differ between the forms: {diff}")

    # The same under torch.compile(fullgraph=True).
    def fn(q, cache, indptr, indices, sp, si):
        f.indexer(q * 1, cache, indptr, indices, sp, si)

    torch._dynamo.reset()
    cfn = torch.compile(fn, fullgraph=True)
    ce, cc = tt.clone_cache(p.cache), tt.clone_cache(p.cache)
    bufs = [(torch.full((rows + 1,), -3, dtype=torch.int32),
             torch.full((total + TAIL,), -5, dtype=torch.int32))
            for _ in range(2)]
    fn(p.q, ce, p.indptr, p.indices, *bufs[0])
    cfn(p.q, cc, p.indptr, p.indices, *bufs[1])
    torch._dynamo.reset()
    if not (torch.equal(bufs[0][0], bufs[1][0])
            and torch.equal(bufs[0][1], bufs[1][1])):
        probs.append("compiled output-buffer form != eager")
    if (not torch.equal(bufs[1][0], sp_a)
            or not (bufs[1][1][total:] == -5).all()):
        probs.append("compiled output-buffer form: wrong indptr or tail "
                     "written")
    diff = tt.same_tensors(ce, cc)
    if diff:
        probs.append(f"compiled output-buffer form: cache differs: {diff}")
    return not probs, "; ".join(probs)


for n, seed in (("running_avg_block_sparse", 1), ("gqa_quest_sparse_attention",
                                                  2)):
    run(f"{n}: output-buffer form (sparse_kv_indices of total + {TAIL})",
        lambda: output_buffers(flows[n], seed))

# The op itself: positional, returns None, writes in place.


def raw_op():
    f = flows["block_sparse_attention"]
    p = tt.make_problem(f, (40, 2), seed=4)
    f.cache_step(p.cache, p.indices)
    args = tt.indexer_args(f, p.q, p.cache, p.indptr, p.indices)
    r = f.indexer_op(*args)
    sp, si = f.indexer(p.q, p.cache, p.indptr, p.indices)
    return (r is None and torch.equal(args[-2], sp)
            and torch.equal(args[-1], si)), f"returned {r!r}"


run("block_sparse_attention: the indexer op called directly returns None "
    "and writes its outputs", raw_op)

# -- the loc form -------------------------------------------------------------
PAGED_TEXT = open(tt.example_path("block_sparse_attention")).read()
assert "page_size = 16" in PAGED_TEXT
paged = tt.load_flow(PAGED_TEXT.replace("page_size = 16", "page_size = 64"))
tally(paged.config["page_size"] == 64 and paged.config["block_size"] == 16,
      "block_sparse_attention with page_size = 64 compiles",
      str(paged.config))
tally(paged.indexer_op is not flows["block_sparse_attention"].indexer_op,
      "the page_size = 64 variant has its own ops (another source hash)")

bsa = flows["block_sparse_attention"]           # block 16, page 16
tok = flows["h2o_token_sparse_attention"]       # block 1, page 1
N = -1
LOC_CASES = [
    # flow, H, loc, hand-computed block ids (token-major, then head)
    (bsa, 2, [15, 31, 17, -1, 47, 0, 79, -17],
     [0, 1, 2, 3, N, N, N, N, 4, 5, N, N, 8, 9, N, N]),
    (bsa, 3, [15, 31, 16], [0, 1, 2, 3, 4, 5, N, N, N]),
    (bsa, 1, [14, 13], [N, N]),                   # completes no block
    # page 64 = 4 blocks of 16; block of (pos, h) = ((pos // 64) * H + h) * 4
    # + (pos % 64) // 16.
    (paged, 2, [15, 31, 63, 79, 127, 64, -1, -17, 191, 50],
     [0, 4, 1, 5, 3, 7, 8, 12, 11, 15, N, N, N, N, N, N, 19, 23, N, N]),
    (paged, 3, [79, 47], [12, 16, 20, 2, 6, 10]),
    (tok, 2, [0, 5, -1, 3], [0, 1, 10, 11, N, N, 6, 7]),
    (tok, 1, [7, -2, 2], [7, N, 2]),
]
for f, H, loc, want in LOC_CASES:
    bs, ps = int(f.config["block_size"]), int(f.config["page_size"])
    model = tt.expected_block_ids(loc, H, bs, ps)
    for dt in (torch.int64, torch.int32):
        def one():
            got = f.block_ids_from_loc(torch.tensor(loc, dtype=dt), H)
            return (got.dtype == torch.int32 and got.shape == (len(loc) * H,)
                    and got.tolist() == want and model == want), (
                f"got {got.dtype} {got.tolist()}, want {want} (model "
                f"{model})")
        run(f"block_ids_from_loc {f.name} (block {bs}, page {ps}) H={H} "
            f"{str(dt)[6:]} loc={loc}", one)


def loc_equals_block_ids(f, H, loc, seed):
    want = tt.expected_block_ids(loc, H, int(f.config["block_size"]),
                                 int(f.config["page_size"]))
    nb = max(want + [0]) + 6
    p = tt.make_problem(f, [nb - 5], seed=seed)   # fields hold garbage
    a, b, c = (tt.clone_cache(p.cache) for _ in range(3))
    f.cache_step(a, loc=torch.tensor(loc, dtype=torch.int64), num_kv_heads=H)
    done = [x for x in want if x >= 0]
    f.cache_step(b, block_ids=torch.tensor(done, dtype=torch.int32))
    probs = []
    diff = tt.same_tensors(a, b)
    if diff:
        probs.append(f"cache_step(loc) != cache_step(block_ids={done}) in "
                     f"{diff}")
    written = f.manifest.steps["cache"].writes
    for w in written:
        changed = sorted(set(
            torch.nonzero((a[w] != c[w]).flatten(1).any(1)).flatten()
            .tolist()))
        if changed != sorted(done):
            probs.append(f"{w}: blocks written {changed}, completed "
                         f"{sorted(done)}")
    return not probs, "; ".join(probs)


for f, H, loc, seed in (
        (bsa, 2, [15, 31, 17, -1, 47, 0, 79, -17], 7),
        (paged, 2, [15, 31, 63, 79, 127, 64, -1, -17, 191, 50], 8),
        (paged, 3, [79, 47, 48], 9),
        (ra, 2, [31, 32, 15, -1, 95], 10),
        (tok, 2, [0, 5, -1, 3], 11),
        (bsa, 2, [14, 13, -1, 0], 12)):      # no completed block
    run(f"cache_step(loc=) == cache_step(block_ids=<completed>) {f.name} "
        f"(page {f.config['page_size']}) H={H} loc={loc}",
        lambda: loc_equals_block_ids(f, H, loc, seed))

# -- negative block ids are skipped -------------------------------------------


def negatives_skipped():
    f = ra
    p = tt.make_problem(f, (30, 7), seed=13, spare=10)
    ids = p.indices[:12].clone()
    mixed = torch.tensor([-1] + ids[:5].tolist() + [-5, -1] + ids[5:].tolist()
                         + [-2 ** 31], dtype=torch.int32)
    a, b, c = (tt.clone_cache(p.cache) for _ in range(3))
    f.cache_step(a, mixed)
    f.cache_step(b, ids)
    probs = []
    diff = tt.same_tensors(a, b)
    if diff:
        probs.append(f"with negatives != without in {diff}")
    for w in f.manifest.steps["cache"].writes:
        changed = sorted(torch.nonzero((a[w] != c[w]).flatten(1).any(1))
                         .flatten().tolist())
        if changed != sorted(ids.tolist()):
            probs.append(f"{w}: blocks written {changed}, listed "
                         f"{sorted(ids.tolist())}")
    for what, bid in (("all negative", [-1, -1, -3]), ("empty", [])):
        d = tt.clone_cache(p.cache)
        f.cache_step(d, torch.tensor(bid, dtype=torch.int32))
        diff = tt.same_tensors(d, c)
        if diff:
            probs.append(f"{what} block_ids wrote {diff}")
    return not probs, "; ".join(probs)


run("cache_step skips negative block ids (mixed in, all negative, empty)",
    negatives_skipped)

tally.exit(summary=True)
