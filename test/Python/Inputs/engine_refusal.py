"""Both engine adapters refuse a flow their per-head float K/V pages cannot
hold (vortex.runtime.paging.check_pageable), by name, before anything is
allocated: shared by test/Python/cpu/int4_kv.py and test/Python/cpu/mla.py.
"""

from vortex.integrations import sglang as sglang_adapter
from vortex.integrations import transformers as hf_adapter


def check_engines_refuse(flow, kind: str, word: str, tally) -> None:
    """`paged|vortex` and the SGLang pool each raise NotImplementedError
    naming `flow` and containing `word` (why: "int4", "MLA"); `kind` names
    the flow in the tally lines."""
    for what, make in (("paged|vortex", lambda: hf_adapter.PagedVortex(flow)),
                       ("SGLang pool", lambda: sglang_adapter.VortexSGLangPool(
                           flow, size=64, head_num=1, layer_num=1))):
        try:
            make()
            tally(False, f"{what} refuses {kind}")
        except NotImplementedError as err:
            tally(word in str(err) and flow.name in str(err),
                  f"{what} refuses {kind}, naming it and why", err)
