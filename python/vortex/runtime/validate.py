"""The one argument validator of both back ends (docs/manifest.md,
"Validation"): step arguments checked against a compiled flow's manifest
(numpy arrays or torch tensors, duck-typed, without reading device memory:
dtype, device, contiguity, shapes against the manifest's symbols, overlap
of what a step writes with what it reads), and the CSR, block-id and slot
values checked on demand. It imports neither torch nor a GPU library.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from .manifest import INT32_MAX, BY_NUMPY, BY_TORCH, Manifest

__all__ = ["check_csr", "check_slot_map", "check_slots", "dtype_name",
           "resolve_symbols", "validate_step"]


def dtype_name(t: Any) -> Optional[str]:
    """The manifest dtype of a numpy array or torch tensor, or None."""
    s = str(getattr(t, "dtype", None))
    if s in BY_TORCH:
        return BY_TORCH[s]
    return BY_NUMPY.get(s)


def _device_of(t: Any) -> Tuple[str, Optional[int]]:
    dev = getattr(t, "device", None)
    if dev is None or isinstance(dev, str) and dev == "cpu":
        return ("cpu", None)       # numpy arrays
    typ = getattr(dev, "type", None)
    if typ is None:
        s = str(dev)
        typ, _, idx = s.partition(":")
        return (typ, int(idx) if idx.isdigit() else None)
    return (typ, getattr(dev, "index", None))


def _is_array(t: Any) -> bool:
    return hasattr(t, "shape") and hasattr(t, "dtype")


def _contiguous(t: Any) -> bool:
    f = getattr(t, "is_contiguous", None)
    if callable(f):
        return bool(f())
    flags = getattr(t, "flags", None)
    return bool(flags["C_CONTIGUOUS"]) if flags is not None else False


def _span(t: Any, itemsize: int) -> Tuple[int, int]:
    f = getattr(t, "data_ptr", None)
    lo = int(f()) if callable(f) else int(t.ctypes.data)
    n = int(t.numel()) if callable(getattr(t, "numel", None)) else int(t.size)
    return lo, lo + n * itemsize


def _fmt_syms(symbols: Mapping[str, int], source: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" + (f" (from {source[k]})" if k in source
                                   else "")
                     for k, v in symbols.items()) or "no symbols"


def resolve_symbols(manifest: Manifest, tensors: Mapping[str, Any],
                    names: Sequence[str]) -> Dict[str, int]:
    """Bind the symbols from the shapes of their defining tensors (the
    manifest's "symbols" order), then check every listed tensor's shape.
    A tensor that disagrees raises ValueError naming it."""
    order = [manifest.symbols[s] for s in manifest.symbols
             if manifest.symbols[s] in names]
    order += [n for n in names if n not in order]
    symbols: Dict[str, int] = {}
    source: Dict[str, str] = {}
    for n in order:
        spec = manifest.tensors[n]
        shape = tuple(int(x) for x in tensors[n].shape)
        if len(shape) != len(spec.shape):
            raise ValueError(f"{n}: rank {len(shape)}, expected "
                             f"{len(spec.shape)} ({spec.format_shape()})")
        for axis, (d, e) in enumerate(zip(spec.shape, shape)):
            if d.symbol is not None and d.symbol not in symbols:
                v = d.solve(e)
                if v is None:
                    raise ValueError(f"{n}: extent {e} of axis {axis} cannot "
                                     f"be {d} ({spec.format_shape()})")
                symbols[d.symbol] = v
                source[d.symbol] = n
            want = d.value(symbols)
            if want != e:
                raise ValueError(
                    f"{n}: shape {list(shape)} does not match "
                    f"{spec.format_shape()} with {_fmt_syms(symbols, source)} "
                    f"(axis {axis}: {e} != {want})")
    for s, v in symbols.items():
        if v > INT32_MAX:
            raise ValueError(f"{source[s]}: {s} = {v} does not fit the "
                             "kernels' i32 scalars")
    return symbols


def validate_step(manifest: Manifest, step: str, tensors: Mapping[str, Any],
                  device: Tuple[str, Optional[int]],
                  may_omit: Sequence[str] = ()) -> Dict[str, int]:
    """Check every argument of `step`: present, an array, on `device`
    (("cpu", None) or ("cuda", index)), of the manifest dtype, contiguous,
    of the right rank and shape, symbols bound consistently, written
    tensors writeable and not sharing memory with another argument.
    Arguments in `may_omit` (ones no launched kernel touches) may be
    absent. Raises ValueError naming the argument; returns the symbols."""
    spec = manifest.steps[step]
    dev_type, dev_index = device
    present = []
    for n in spec.args:
        t_spec = manifest.tensors[n]
        t = tensors.get(n)
        if t is None and n in may_omit:
            continue
        present.append(n)
        if t is None:
            raise ValueError(f"{n}: missing (the flow's {t_spec.role} tensor "
                             f"{t_spec.format_shape()} {t_spec.dtype})")
        if not _is_array(t):
            raise ValueError(f"{n}: expected a tensor, got "
                             f"{type(t).__name__}")
        typ, idx = _device_of(t)
        if typ != dev_type:
            raise ValueError(f"{n}: on {typ}, the flow runs on {dev_type} "
                             f"(backend {manifest.backend})")
        if dev_index is not None and idx is not None and idx != dev_index:
            raise ValueError(f"{n}: on {typ}:{idx}, the other arguments are "
                             f"on {dev_type}:{dev_index}")
        got = dtype_name(t)
        if got != t_spec.dtype:
            raise ValueError(f"{n}: dtype {getattr(t, 'dtype', None)}, "
                             f"expected {t_spec.torch_dtype.split('.')[1]} "
                             f"({t_spec.dtype})")
        if not _contiguous(t):
            raise ValueError(f"{n}: must be contiguous")
        if n in spec.writes:
            flags = getattr(t, "flags", None)
            if flags is not None and not flags["WRITEABLE"]:
                raise ValueError(f"{n}: must be writeable (the step "
                                 "writes it)")
    symbols = resolve_symbols(manifest, tensors, present)
    spans = {n: _span(tensors[n], manifest.tensors[n].itemsize)
             for n in present}
    for w in spec.writes:
        if w not in spans:
            continue
        a0, a1 = spans[w]
        if a0 == a1:
            continue
        for n, (b0, b1) in spans.items():
            if n != w and b0 != b1 and a0 < b1 and b0 < a1:
                raise ValueError(f"{w}: shares memory with {n} (the step "
                                 f"writes {w})")
    return symbols


def check_slot_map(manifest: "Manifest", given: bool) -> Optional[str]:
    """A flow with slotted fields needs `slot_of_ptr`, any other refuses it
    (docs/contract.md, "Slotted fields"). Returns the field that binds
    num_slots (None without slotted fields); raises ValueError naming
    slot_of_ptr."""
    slotted = manifest.symbols.get("num_slots")
    if slotted is None and given:
        raise ValueError("slot_of_ptr: this flow has no slotted fields")
    if slotted is not None and not given:
        raise ValueError(f"slot_of_ptr: required (the flow has slotted "
                         f"fields, e.g. {slotted!r})")
    return slotted


def check_slots(slots: Sequence[int], block_ids: Sequence[int],
                num_slots: int, field: str) -> None:
    """The slots of the completed blocks (host lists or arrays): each < 0
    (the block is skipped) or in [0, num_slots). Raises ValueError naming
    slot_of_ptr."""
    for b in block_ids:
        s = int(slots[int(b)])
        if s >= num_slots:
            raise ValueError(
                f"slot_of_ptr: slot {s} of block {int(b)} is out of range "
                f"[0, {num_slots}) (num_slots = {field}.shape[0]); a slot "
                "< 0 skips the block")


def check_csr(indptr: Sequence[int], indices: Sequence[int],
              num_blocks: int, rows: Optional[int] = None,
              unique: bool = False, indptr_name: str = "dense_kv_indptr",
              indices_name: str = "dense_kv_indices") -> None:
    """Check CSR values (host lists or arrays): indptr has rows + 1 entries,
    starts at 0, is non-decreasing and ends at len(indices); block ids in
    [0, num_blocks); with `unique`, no block id is in two rows (a flow that
    saves per-block state; within a row an id may repeat: docs/contract.md,
    "State"). Raises ValueError naming the argument."""
    ip = [int(x) for x in indptr]
    ix = [int(x) for x in indices]
    if rows is not None and len(ip) != rows + 1:
        raise ValueError(f"{indptr_name}: expected {rows + 1} entries (rows "
                         f"+ 1, rows = q.shape[0] = {rows}), got {len(ip)}")
    if not ip or ip[0] != 0:
        raise ValueError(f"{indptr_name}: must start at 0, starts at "
                         f"{ip[0] if ip else 'nothing'}")
    for r, (a, b) in enumerate(zip(ip, ip[1:])):
        if b < a:
            raise ValueError(f"{indptr_name}: must be non-decreasing, but "
                             f"{indptr_name}[{r + 1}] = {b} < "
                             f"{indptr_name}[{r}] = {a}")
    if ip[-1] != len(ix):
        raise ValueError(f"{indptr_name}: must end at len({indices_name}) = "
                         f"{len(ix)}, ends at {ip[-1]}")
    for i, b in enumerate(ix):
        if b < 0 or b >= num_blocks:
            raise ValueError(f"{indices_name}: block id {b} at position {i} "
                             f"is out of range [0, {num_blocks}) (num_blocks "
                             "= k.shape[0])")
    if unique and len(set(ix)) != len(ix):
        row_of: dict = {}
        for r, (a, b) in enumerate(zip(ip, ip[1:])):
            for blk in ix[a:b]:
                if row_of.setdefault(blk, r) != r:
                    raise ValueError(
                        f"{indices_name}: block id {blk} appears in rows "
                        f"{row_of[blk]} and {r} (more than once); the flow "
                        "saves per-block state, so a block may belong to "
                        "one row only")
