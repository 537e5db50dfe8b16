"""Flows with custom ops, compiled around them (CPU and GPU).

`vortex.compile` of a flow whose indexer calls registered torch functions
(`vortex.register_op`) splits the traced IR at each call
(`vortex-opt --vortex-split-custom-calls`), compiles every stage flow
`<flow>_stage<k>` with vortex-compile, and writes `<flow>.<hash>.staged.json`:
the stages' manifests and the calls between them. `vortex.load` of it
gives a `StagedFlow`: `indexer` runs stage 0, call 0 on the values stage 0
exported (`c0_in<j>`), stage 1 with the call's result (`c0_out`), ... ;
the runtime allocates every value that crosses a cut (docs/python.md,
"Custom ops"). `attend` is any stage's (it depends on the config only)
and `decode` the staged indexer, then attend over its selection. The CPU
back end is checked in test/Python/eager/custom_ops.py; the GPU path
(stage kernels from convert-vortex-to-gpu, launched with
`CompiledFlowGPU.run_step`) on the GPU machine by
bench/custom_gpu_check.py.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .compiler import driver as compiler
from .environment import import_torch
from .indexer.custom_op import CustomLayout, custom
from .runtime.attention import (check_attend_values, check_decode_manifest,
                                default_scale)
from .runtime.cpu import CompiledFlow, _as_index_array
from .runtime.manifest import Manifest

__all__ = ["StagedFlow", "compile_staged", "is_staged", "load"]

KIND = "vortex.staged"


def compile_staged(text: str, name: str, calls: Sequence[Any], target: str,
                   out_dir: Any = None, options: Sequence[str] = (),
                   use_cache: bool = True) -> str:
    """Split `text` (the traced flow `name`) at its custom ops `calls` (the
    traced op objects, in order), compile each stage, and return the path
    of the staged manifest."""
    opt = compiler.find_tool("vortex-opt")
    split = compiler.run_tool(
        [opt, "-", "--vortex-split-custom-calls", "--mlir-print-debuginfo"],
        f"splitting flow '{name}' at its custom ops", stdin=text)
    stages = []
    for k in range(len(calls) + 1):
        sub = None if out_dir is None else os.path.join(out_dir, f"stage{k}")
        stages.append(os.path.abspath(compiler.compile(
            split, target=target, out_dir=sub, flow=f"{name}_stage{k}",
            options=options, use_cache=use_cache)))
    where = os.path.abspath(out_dir or os.path.dirname(stages[0]))
    os.makedirs(where, exist_ok=True)
    # Relative to the staged manifest: the directory may move (to the GPU
    # machine) as a whole.
    spec = {"kind": KIND, "version": 1, "flow": name,
            "stages": [os.path.relpath(p, where) for p in stages],
            "calls": [{"name": c.op_name, "attrs": c.attrs} for c in calls]}
    # Named by its content: flows whose stage 0 is the same (one cache
    # directory) may differ in their calls or later stages.
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode())
    path = os.path.join(where,
                        f"{name}.{digest.hexdigest()[:12]}.staged.json")
    with open(path, "w") as fh:
        json.dump(spec, fh, indent=2)
    return path


def is_staged(path: Any) -> bool:
    return isinstance(path, (str, os.PathLike)) and \
        str(path).endswith(".staged.json")


class StagedFlow:
    """A flow compiled around its custom ops: `indexer`, `cache_step`,
    `attend` and `decode` on torch tensors (on the CPU: float32, the fields
    updated in place; on the GPU: the stages' dtypes)."""

    def __init__(self, path: str, device: Any = None,
                 params: Optional[Mapping[str, Any]] = None) -> None:
        with open(path) as fh:
            spec = json.load(fh)
        if spec.get("kind") != KIND or spec.get("version") != 1:
            raise ValueError(f"{path}: not a staged flow (version 1)")
        self.name, self.path = spec["flow"], path
        base = os.path.dirname(os.path.abspath(path))
        spec["stages"] = [os.path.join(base, p) for p in spec["stages"]]
        self.gpu = Manifest.from_file(spec["stages"][0]).backend == "cuda"
        if self.gpu:
            from .runtime import cuda
            self.stages = [cuda.load(p, device) for p in spec["stages"]]
        else:
            self.stages = [CompiledFlow(p) for p in spec["stages"]]
        # The registered functions, looked up now: an unregistered name is
        # an error here, not at the first step.
        self.calls = []
        for c in spec["calls"]:
            op = custom(c["name"])
            if not hasattr(op, "_def"):
                raise ValueError(f"{path}: custom op {c['name']!r} is not "
                                 "registered (vortex.register_op) in this "
                                 "process")
            self.calls.append((op, c["attrs"]))
        self.config = dict(self.stages[0].manifest.config)
        # Every stage takes the flow's parameters (its bodies keep them).
        m0 = self.stages[0].manifest
        names = [n for n in m0.steps["indexer"].args
                 if m0.tensors[n].role == "parameter"]
        torch = import_torch()
        self.device = (self.stages[0].device if self.gpu
                       else torch.device("cpu"))
        # Imported here: vortex.api imports this module, and torch only
        # when a staged flow is loaded.
        from .runtime.params import BoundParams
        self._binding = BoundParams(m0, names, self.device)
        if params is not None:
            self.bind(params)

    def bind(self, params: Mapping[str, Any]) -> None:
        """Bind the flow's parameters, as `Flow.bind` does (a `[r, c]`
        value, or per-layer `[L, r, c]` weights with a lookup, the layer
        chosen per call with `layer=`)."""
        self._binding.bind(params)

    def _params(self, layer: Optional[int]) -> Dict[str, Any]:
        """The parameters of a call for `layer`: tensors on the GPU, float32
        arrays on the CPU. Raises ValueError naming what is missing."""
        missing = self._binding.missing()
        if missing:
            raise ValueError(f"params: {missing} not bound (StagedFlow.bind, "
                             "or vortex.load(path, params=...))")
        values = self._binding.for_layer(layer)
        return dict(values) if self.gpu else \
            {n: t.detach().numpy() for n, t in values.items()}

    def __repr__(self) -> str:
        return (f"StagedFlow(@{self.name}, {len(self.stages)} stages, calls "
                f"{[op._def.name for op, _ in self.calls]})")

    @staticmethod
    def _numpy_cache(cache: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        out = {}
        for n, t in cache.items():
            if not hasattr(t, "numpy") or t.dtype != import_torch().float32:
                raise ValueError(f"cache[{n!r}]: expected a float32 CPU torch "
                                 "tensor (updated in place)")
            out[n] = t.detach().numpy()
        return out

    def cache_step(self, cache: Mapping[str, Any], block_ids,
                   layer: Optional[int] = None) -> None:
        """Stage 0's cache step (every stage has the flow's cache body)."""
        params = self._params(layer)
        if self.gpu:
            torch = import_torch()
            ids = block_ids.to(cache["k"].device, torch.int32)
            self.stages[0].run_step("cache", dict(cache, block_ids=ids,
                                                  **params))
            return
        self.stages[0].cache_step(self._numpy_cache(cache),
                                  np.asarray(block_ids), params=params)

    def _indexer_gpu(self, q, cache, dense_kv_indptr, dense_kv_indices,
                     params):
        """`indexer` on the GPU: torch tensors on the flow's device, the
        cut values in the stages' dtypes."""
        torch = import_torch()
        dev = q.device
        indptr = dense_kv_indptr.to(dev, torch.int32)
        indices = dense_kv_indices.to(dev, torch.int32)
        rows, total = indptr.numel() - 1, indices.numel()
        layout = CustomLayout.from_csr(indptr.long(), total, self.config)
        sparse = (torch.zeros_like(indptr), torch.zeros_like(indices))
        values: Dict[str, Any] = {}
        for k, stage in enumerate(self.stages):
            m = stage.manifest
            args = dict(cache, q=q, dense_kv_indptr=indptr,
                        dense_kv_indices=indices, sparse_kv_indptr=sparse[0],
                        sparse_kv_indices=sparse[1], **params)
            args.update({n: values[n] for n in m.steps["indexer"].args
                         if n in values})
            outputs = {n: torch.zeros(
                _shape(m.tensors[n], rows, total),
                dtype=getattr(torch, m.tensors[n].torch_dtype.split(".")[1]),
                device=dev) for n in _exports(m)}
            args.update(outputs)
            stage.run_step("indexer", args)
            values.update(outputs)
            if k < len(self.calls):
                nxt = self.stages[k + 1].manifest.tensors[f"c{k}_out"]
                out = self._call(k, values, layout, rows, total)
                values[f"c{k}_out"] = out.to(dev, getattr(
                    torch, nxt.torch_dtype.split(".")[1])).contiguous()
        end = int(sparse[0][-1])
        return sparse[0], sparse[1][:end].clone()

    def indexer(self, q, cache: Mapping[str, Any], dense_kv_indptr,
                dense_kv_indices, layer: Optional[int] = None
                ) -> Tuple[Any, Any]:
        """One decode step: `(sparse_kv_indptr, sparse_kv_indices)` (int32
        torch tensors, the indices cut to `sparse_kv_indptr[-1]`); `layer`
        picks the slice of per-layer parameters."""
        torch = import_torch()
        params = self._params(layer)
        if self.gpu:
            return self._indexer_gpu(q, cache, dense_kv_indptr,
                                     dense_kv_indices, params)
        np_cache = self._numpy_cache(cache)
        qa = np.ascontiguousarray(np.asarray(q, dtype=np.float32))
        indptr = _as_index_array("dense_kv_indptr",
                                 np.asarray(dense_kv_indptr))
        indices = _as_index_array("dense_kv_indices",
                                  np.asarray(dense_kv_indices))
        rows, total = indptr.shape[0] - 1, indices.shape[0]
        layout = CustomLayout.from_csr(torch.from_numpy(indptr).long(), total,
                                       self.config)
        values: Dict[str, np.ndarray] = {}
        sparse = (np.zeros(indptr.shape[0], np.int32),
                  np.zeros(total, np.int32))
        for k, stage in enumerate(self.stages):
            m = stage.manifest
            args = stage._cache_args(np_cache)
            args.update(q=qa, dense_kv_indptr=indptr, dense_kv_indices=indices,
                        sparse_kv_indptr=sparse[0],
                        sparse_kv_indices=sparse[1], **params)
            outputs = _stage_outputs(m, rows, total)
            for n in m.steps["indexer"].args:
                if n in values:
                    args[n] = values[n]
            args.update(outputs)
            stage.runtime.run_step("indexer", args)
            values.update(outputs)
            if k < len(self.calls):
                values[f"c{k}_out"] = np.ascontiguousarray(self._call(
                    k, values, layout, rows, total).float().numpy())
        end = int(sparse[0][-1])
        return (torch.from_numpy(sparse[0]),
                torch.from_numpy(sparse[1][:end].copy()))

    # -- attention (docs/contract.md "Attention") ---------------------------
    def _scale(self, sm_scale: Optional[float]) -> float:
        """The softmax scale (default 1/sqrt(D)); ValueError naming it."""
        scale = default_scale(int(self.config["head_dim"])) \
            if sm_scale is None else sm_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise ValueError(f"sm_scale: expected a float, got "
                             f"{type(scale).__name__}")
        return float(scale)

    def _attend_inputs(self, q, cache, kv_indptr, kv_indices, kv_last_len,
                       sm_scale, names=("kv_indptr", "kv_indices")):
        """Checks an attend call's arguments before anything runs (q, the
        scale, the CSR and kv_last_len, naming the argument) and returns
        (the pools as the stages take them, the scale). An MLA flow's pool
        may be named `latent`, as vortex_torch names it."""
        stage = self.stages[-1]
        if "attend" not in stage.manifest.steps:
            raise NotImplementedError(
                f"flow @{self.name}: this {stage.manifest.backend} build has "
                "no attend step (the GPU back end emits it only for the "
                "shapes its kernels support, docs/gpu.md \"Attention\")")
        if getattr(q, "ndim", 0) != 3:
            raise ValueError(f"q: expected a tensor [rows, T x G, D], got "
                             f"{type(q).__name__}")
        pools = dict(cache)
        if stage.manifest.is_mla and "latent" in pools:
            if "k" in pools or "v" in pools:
                raise ValueError("cache: an MLA flow takes its pool as "
                                 "'latent' or as 'k' and 'v', not both")
            pools["k"] = pools["v"] = pools.pop("latent")
        if "k" not in pools:
            raise ValueError("cache: missing 'k' (the k pool)")
        scale = self._scale(sm_scale)

        def host(x):
            return x.tolist() if hasattr(x, "tolist") else list(x)
        check_attend_values(host(kv_indptr), host(kv_indices),
                            host(kv_last_len), int(pools["k"].shape[0]),
                            int(self.config["block_size"]), int(q.shape[0]),
                            *names)
        return pools, scale

    def attend(self, q, cache: Mapping[str, Any], kv_indptr, kv_indices,
               kv_last_len, sm_scale: Optional[float] = None
               ) -> Tuple[Any, Any]:
        """Decode attention over a CSR, as `Flow.attend`: `(o, lse)` as torch
        tensors on q's device. Every stage holds the flow's config, so any
        stage's attend step is the flow's; the last one's runs. Bad
        arguments raise a ValueError naming them before anything runs."""
        pools, scale = self._attend_inputs(q, cache, kv_indptr, kv_indices,
                                           kv_last_len, sm_scale)
        return self._attend(q, pools, kv_indptr, kv_indices, kv_last_len,
                            scale)

    def _attend(self, q, pools, kv_indptr, kv_indices, kv_last_len,
                scale: float) -> Tuple[Any, Any]:
        torch = import_torch()
        stage = self.stages[-1]
        if not self.gpu:
            o, lse = stage.attend(np.asarray(q, dtype=np.float32),
                                  self._numpy_cache(pools),
                                  np.asarray(kv_indptr),
                                  np.asarray(kv_indices),
                                  np.asarray(kv_last_len), sm_scale=scale)
            return torch.from_numpy(o), torch.from_numpy(lse)
        dev = q.device
        o = torch.empty_like(q)
        lse = torch.empty(q.shape[:2], dtype=torch.float32, device=dev)
        idx = {n: torch.as_tensor(x).to(dev, torch.int32) for n, x in
               (("kv_indptr", kv_indptr), ("kv_indices", kv_indices),
                ("kv_last_len", kv_last_len))}
        args = dict(pools, q=q, o=o, lse=lse, **idx,
                    sm_scale=torch.tensor([scale], dtype=torch.float32,
                                          device=dev))
        stage.run_step("attend", args)
        return o, lse

    def decode(self, q, cache: Mapping[str, Any], dense_kv_indptr,
               dense_kv_indices, kv_last_len,
               sm_scale: Optional[float] = None,
               layer: Optional[int] = None):
        """The staged indexer, then attend over its selection, as
        `Flow.decode`: `(o, lse, sparse_kv_indptr, sparse_kv_indices)`.
        Every argument is checked before anything runs, and the flow's
        `decode_refusal` (a selection that may drop the row's last tokens)
        is honoured; an MLA flow's o has kv_lora_rank channels."""
        m = self.stages[-1].manifest
        check_decode_manifest(m)
        pools, scale = self._attend_inputs(
            q, cache, dense_kv_indptr, dense_kv_indices, kv_last_len,
            sm_scale, ("dense_kv_indptr", "dense_kv_indices"))
        self._params(layer)             # a missing layer= refused now
        sp, si = self.indexer(q, pools, dense_kv_indptr, dense_kv_indices,
                              layer=layer)
        o, lse = self._attend(q, pools, sp, si, kv_last_len, scale)
        if m.is_mla:    # the values: the latent's kv_c channels
            o = o[..., :m.kv_lora_rank]
        return o, lse, sp, si

    def _call(self, k: int, values: Dict[str, np.ndarray], layout, rows: int,
              total: int) -> np.ndarray:
        """Call k on the values stage k exported, its result checked against
        the shape the next stage imports."""
        torch = import_torch()
        op, attrs = self.calls[k]
        ins = [torch.as_tensor(values[n]).float() for n in sorted(
            (n for n in values if n.startswith(f"c{k}_in")),
            key=lambda n: int(n[len(f"c{k}_in"):]))]
        out = op._def.fn(*ins, layout=layout, **attrs)
        want = _import_shape(self.stages[k + 1].manifest, f"c{k}_out", rows,
                             total)
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != want:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else \
                type(out).__name__
            raise ValueError(f"{op._def.name}: the function returned {got}; "
                             f"its shape rule declares {list(want)}")
        return out.detach()


def _shape(rec, rows: int, total: int) -> Tuple[int, ...]:
    return rec.extents({"total": total, "rows": rows})


def _exports(m) -> List[str]:
    """A stage's exports: the writes that are neither the CSR nor a field."""
    return [n for n in m.steps["indexer"].writes
            if m.tensors[n].role == "output" and len(m.tensors[n].shape) == 3]


def _stage_outputs(m, rows: int, total: int) -> Dict[str, np.ndarray]:
    """Buffers for a stage's exports (CPU: float32)."""
    return {n: np.zeros(_shape(m.tensors[n], rows, total), np.float32)
            for n in _exports(m)}


def _import_shape(m, name: str, rows: int, total: int) -> Tuple[int, ...]:
    return _shape(m.tensors[name], rows, total)


def load(path: str, device: Any = None,
         params: Optional[Mapping[str, Any]] = None) -> StagedFlow:
    return StagedFlow(path, device, params)
