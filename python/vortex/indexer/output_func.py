"""Selections (vortex_torch `indexer/output_func.py` and `select.py`): the
terminal topK / approxTopK(score, o), and the trtllm pair TopK(k) + Union.
The budget, BOS and EOS come from the flow's config."""

from __future__ import annotations

from ..abs.op import Schedule
from ..frontend.oplib import TracedOp
from ..frontend.types import BATCHED, RAGGED, f32_attr, i64_attr

__all__ = ["topK", "approxTopK", "TopK", "Union"]


class topK(TracedOp):
    """`op(score, o, ctx=ctx)`: per row, the BOS blocks, the best-scored
    blocks of the middle and the EOS blocks, written to `o`. `score` is
    ragged `[S, 1, 1]`. Every indexer ends in exactly one selection."""

    mnemonic = "topk"

    def __init__(self) -> None:
        super().__init__()
        self.schedule = Schedule.S

    def _attrs(self):
        return []

    def trace(self, score, o, *, ctx):
        self._emit_into(ctx, ctx.value(score, "score"), ctx.target(o, "o"),
                        self._attrs())


class approxTopK(topK):
    """`approxTopK(tolerate_ratio=0.0)`: topK whose radix select may stop
    with up to `tolerate_ratio * k` candidates undecided (0 is exact)."""

    mnemonic = "approx_topk"

    def __init__(self, tolerate_ratio: float = 0.0) -> None:
        super().__init__()
        tol = self._float_arg("tolerate_ratio", tolerate_ratio)
        self._check("tolerate_ratio", tolerate_ratio, 0.0 <= tol <= 1.0,
                    "in [0.0, 1.0]")
        self.tolerate_ratio = tol

    def _attrs(self):
        return [f"tolerate_ratio = {f32_attr(self.tolerate_ratio)}"]


class TopK(TracedOp):
    """`TopK(k)`, `block_tables, seqlens = op(score, ctx=ctx)`: the
    trtllm selection of `k` middle blocks per row (plus BOS and EOS), as a
    ragged block table and batched per-row lengths; combine two with
    Union."""

    mnemonic = "trtllm_topk"

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = self._int_arg("k", k, minimum=1)
        self.schedule = Schedule.S

    def trace(self, score, *, ctx):
        s = ctx.value(score, "score")
        bt = ctx.new_value(1, 1, RAGGED, "i32")
        sl = ctx.new_value(1, 1, BATCHED, "i32")
        ctx.emit(f"{bt._ssa}, {sl._ssa} = vortex.trtllm_topk {s._ssa} "
                 f"{{k = {i64_attr(self.k)}}} : {ctx.type_of(s)} -> "
                 f"{ctx.type_of(bt)}, {ctx.type_of(sl)}")
        return bt, sl


class Union(TracedOp):
    """`op((bt0, sl0), (bt1, sl1), o, ctx=ctx)`: per row, the union of two
    TopK selections (the row's last block pinned at the tail), written to
    `o`; a terminal op."""

    mnemonic = "union"

    def __init__(self) -> None:
        super().__init__()
        self.schedule = Schedule.S

    def _pair(self, ctx, pair, name):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            ctx.error(f"{name} must be a (block_table, seqlens) tuple from "
                      f"TopK, got {type(pair).__name__}")
        return (ctx.value(pair[0], f"{name}[0]"),
                ctx.value(pair[1], f"{name}[1]"))

    def trace(self, i_0, i_1, o, *, ctx):
        bt0, sl0 = self._pair(ctx, i_0, "i_0")
        bt1, sl1 = self._pair(ctx, i_1, "i_1")
        out = ctx.target(o, "o")
        ctx.emit(f"vortex.union ({bt0._ssa}, {sl0._ssa}), ({bt1._ssa}, "
                 f"{sl1._ssa}) into {out._ssa} : {ctx.type_of(bt0)}, "
                 f"{ctx.type_of(sl0)} into {ctx.type_of(out)}")
