# RUN: %python %s %examples
# REQUIRES: numpy
#
# CompiledFlow validates every argument before calling into the compiled
# code: a bad argument raises ValueError naming it, and nothing is written
# (every cache tensor is byte-identical afterwards). Uses running_avg (its
# indexer saves running_score, its cache step writes two fields) and Quest
# (two fields of equal shape, for the aliasing check).

import os
import sys

import numpy as np

import vortex

failures = 0


def check(what, fn, cache, needle):
    """fn() must raise ValueError mentioning `needle`, cache untouched."""
    global failures
    before = {n: a.copy() for n, a in cache.items()}
    try:
        fn()
    except ValueError as err:
        msg = str(err)
        untouched = all(np.array_equal(before[n], cache[n], equal_nan=True)
                        for n in before)
        ok = needle in msg and untouched
        print(("PASS " if ok else "FAIL ") + f"{what}: ValueError: {msg}")
        if not untouched:
            print("    the cache was modified")
        failures += not ok
        return
    except Exception as err:  # noqa: BLE001
        print(f"FAIL {what}: raised {type(err).__name__}: {err}")
        failures += 1
        return
    print(f"FAIL {what}: no error")
    failures += 1


examples = sys.argv[1]
flow = vortex.compile_flow(os.path.join(examples,
                                        "running_avg_block_sparse.mlir"))
assert flow.info.indexer_writes == ["running_score"], flow.info
rng = np.random.default_rng(0)
NB = 120
cache = {n: rng.standard_normal(s).astype(np.float32)
         for n, s in flow.cache_shapes(NB).items()}
lengths = [40, 3, 0, 50]
indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
indices = rng.permutation(NB)[:indptr[-1]].astype(np.int32)
q = rng.standard_normal((4, 8, 128)).astype(np.float32)

# Sanity: valid calls work (and q may be float64 or a nested list: converted).
flow.cache_step(cache, indices)
flow.indexer(q.astype(np.float64), cache, indptr, indices)
flow.indexer(q.tolist(), cache, indptr.tolist(), indices.tolist())


def idx(**kw):
    args = dict(q=q, cache=cache, dense_kv_indptr=indptr,
                dense_kv_indices=indices)
    args.update(kw)
    return lambda: flow.indexer(args["q"], args["cache"],
                                args["dense_kv_indptr"],
                                args["dense_kv_indices"])


def with_field(name, value):
    c = dict(cache)
    c[name] = value
    return c


bad = indptr.copy()
bad[2] = bad[1] - 1
check("non-monotone indptr", idx(dense_kv_indptr=bad), cache,
      "dense_kv_indptr")
check("indptr not starting at 0", idx(dense_kv_indptr=indptr + 1), cache,
      "dense_kv_indptr")
check("indptr not ending at len(indices)",
      idx(dense_kv_indices=indices[:-1]), cache, "dense_kv_indptr")
check("indptr of the wrong length (rows != q.shape[0])",
      idx(dense_kv_indptr=indptr[:-1]), cache, "dense_kv_indptr")
check("indptr of float dtype", idx(dense_kv_indptr=indptr.astype(float)),
      cache, "dense_kv_indptr")
check("indptr 2-D", idx(dense_kv_indptr=indptr[None, :]), cache,
      "dense_kv_indptr")
bad = indices.copy()
bad[5] = NB
check("block id == num_blocks", idx(dense_kv_indices=bad), cache,
      "dense_kv_indices")
bad[5] = -1
check("negative block id", idx(dense_kv_indices=bad), cache,
      "dense_kv_indices")
bad = indices.astype(np.int64)
bad[7] = 2**40
check("block id beyond int32", idx(dense_kv_indices=bad), cache,
      "dense_kv_indices")
bad = indices.copy()
bad[-1] = bad[0]        # row 0's first block again in row 3
check("block id in two rows (flow saves state)", idx(dense_kv_indices=bad),
      cache, "dense_kv_indices")
# Within one row a block may repeat (docs/contract.md, "State").
same_row = indices.copy()
same_row[1] = same_row[0]
flow.indexer(q, {n: a.copy() for n, a in cache.items()}, indptr, same_row)
check("indices of float dtype", idx(dense_kv_indices=indices.astype(float)),
      cache, "dense_kv_indices")
check("q with the wrong group size", idx(q=q[:, :4]), cache, "q")
check("q with the wrong head_dim", idx(q=q[:, :, :64]), cache, "q")
check("q 2-D", idx(q=q[:, 0]), cache, "q")
check("q of complex dtype", idx(q=q.astype(np.complex64)), cache, "q")
check("field of dtype float64",
      idx(cache=with_field("centroids", cache["centroids"].astype(np.float64))),
      cache, "centroids")
check("k of dtype float16",
      idx(cache=with_field("k", cache["k"].astype(np.float16))), cache,
      "k: dtype float16")
check("field not C-contiguous",
      idx(cache=with_field("centroids",
                           np.zeros((NB, 1, 256), np.float32)[:, :, ::2])),
      cache, "centroids")
check("field not an ndarray",
      idx(cache=with_field("running_score", cache["running_score"].tolist())),
      cache, "running_score")
check("field of the wrong inner shape",
      idx(cache=with_field("running_score", np.zeros((NB, 1, 2), np.float32))),
      cache, "running_score")
check("field with another number of blocks",
      idx(cache=with_field("centroids", cache["centroids"][:-1].copy())),
      cache, "centroids")
ro = cache["running_score"].copy()
ro.setflags(write=False)
check("read-only field", idx(cache=with_field("running_score", ro)), cache,
      "running_score")
c = dict(cache)
del c["running_score"]
check("missing field", idx(cache=c), cache, "running_score")
check("unknown cache key",
      idx(cache=with_field("centroid", cache["centroids"])), cache, "centroid")

# cache_step
check("cache_step: block id out of range",
      lambda: flow.cache_step(cache, np.array([0, NB])), cache, "block_ids")
check("cache_step: negative block id",
      lambda: flow.cache_step(cache, np.array([-1])), cache, "block_ids")
check("cache_step: float block ids",
      lambda: flow.cache_step(cache, np.array([1.0, 2.0])), cache, "block_ids")
check("cache_step: 2-D block ids",
      lambda: flow.cache_step(cache, np.array([[1, 2]])), cache, "block_ids")
check("cache_step: field of dtype float64",
      lambda: flow.cache_step(
          with_field("centroids", cache["centroids"].astype(np.float64)), [1]),
      cache, "centroids")

# Aliasing: two written fields sharing memory.
quest = vortex.compile_flow(os.path.join(examples,
                                         "gqa_quest_sparse_attention.mlir"))
qc = quest.allocate_cache(8)
qc["min"] = qc["max"]
check("cache_step: written fields alias", lambda: quest.cache_step(qc, [0]),
      qc, "max: shares memory with min")

sys.exit(1 if failures else 0)
