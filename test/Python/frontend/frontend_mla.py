# RUN: %python %s
#
# MLA flows (vFlowMLA) in the tracer: a flow written the vortex_torch way
# (create_cache(block_size, kv_lora_rank, qk_rope_head_dim), the latent as
# cache["latent"], the absorbed query q = [q_nope_out | q_pe]) traces under
# FlowConfig.mla (its default config) to a flow whose config carries the
# latent's widths and whose k is the latent; and every misuse is an error
# naming what is wrong: a config of the other kind (FlowTraceError naming
# config), widths that do not add up (ValueError naming head_dim), one
# width alone, a create_cache that declares the latent or k, cache["k"] or
# cache["v"] in an MLA flow (MissingFieldError), a rope-unaware flow at a
# kv_lora_rank it does not mask.

import vortex
from vortex import api, testing
from vortex import cache as C
from vortex import indexer as I
from vortex.flow import vFlow, vFlowMLA
from vortex.frontend import FlowTraceError, MissingFieldError

tally = testing.Tally()


class Centroid(vFlowMLA):
    def __init__(self, key="latent", extra=None):
        super().__init__()
        self.key, self.extra = key, extra
        self.mean, self.gemm, self.topk = I.Mean(dim=1), I.GeMM(), I.topK()
        self.reduction = C.Mean(dim=1)

    def create_cache(self, block_size, kv_lora_rank, qk_rope_head_dim):
        fields = {"centroids": (1, kv_lora_rank + qk_rope_head_dim)}
        fields.update(self.extra or {})
        return fields

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache[self.key], cache["centroids"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        s = self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)
        self.topk(s, o, ctx=ctx)


class Mha(vFlow):
    def __init__(self):
        super().__init__()
        self.mean, self.gemm, self.topk = I.Mean(dim=1), I.GeMM(), I.topK()

    def create_cache(self, block_size, head_dim):
        return {}

    def forward_cache(self, cache, loc, ctx):
        pass

    def forward_indexer(self, q, o, cache, ctx):
        self.topk(self.gemm(self.mean(q, ctx=ctx), cache["k"], ctx=ctx), o,
                  ctx=ctx)


# The default config of an MLA flow: 512 + 64, verified by vortex-opt.
text = api.trace(Centroid(), name="mla")
tally("kv_lora_rank = 512, rope_dim = 64>" in text and "head_dim = 576" in text
      and "vortex.mean %k" in text and "fields(centroids = [1, 576])" in text,
      "an MLA flow traces under FlowConfig.mla(): the config names the "
      "latent's widths, cache['latent'] is k", text)
cfg = vortex.FlowConfig.mla(256, 32, group_size=5, block_size=32,
                            page_size=32)
tally(cfg.head_dim == 288 and cfg.is_mla, "FlowConfig.mla sets head_dim")
text = api.trace(Centroid(), cfg, name="mla")
tally("?x5x288xbf16, #vortex.format<batched>" in text,
      "q is the absorbed query of all the heads [B, H, 288]", text)


def raises(what, fn, kind, *needles):
    try:
        fn()
    except kind as err:
        msg = str(err)
        tally(all(n in msg for n in needles), what, msg)
        return
    except Exception as err:  # noqa: BLE001
        tally(False, what, f"{type(err).__name__}: {err}")
        return
    tally(False, what, "no error")


raises("an MLA flow under a config without the widths",
       lambda: api.trace(Centroid(), vortex.FlowConfig()), FlowTraceError,
       "config:", "Centroid is an MLA flow", "kv_lora_rank")
raises("a vFlow under an MLA config",
       lambda: api.trace(Mha(), vortex.FlowConfig.mla()), FlowTraceError,
       "config:", "Mha is not one")
raises("widths that do not add up to head_dim",
       lambda: vortex.FlowConfig(kv_lora_rank=512, rope_dim=64),
       ValueError, "FlowConfig.head_dim must be kv_lora_rank + rope_dim",
       "got 128")
raises("one width alone", lambda: vortex.FlowConfig(kv_lora_rank=128),
       ValueError, "kv_lora_rank and rope_dim", "both be positive")
raises("create_cache declaring the latent",
       lambda: api.trace(Centroid(extra={"latent": (1, 576)})),
       FlowTraceError, "create_cache", "'latent'")
raises("create_cache declaring k",
       lambda: api.trace(Centroid(extra={"k": (1, 576)})),
       FlowTraceError, "create_cache", "'k'")
raises("cache['k'] in an MLA flow", lambda: api.trace(Centroid(key="k")),
       MissingFieldError, "'k'", "latent")
raises("cache['v'] in an MLA flow", lambda: api.trace(Centroid(key="v")),
       MissingFieldError, "'v'", "latent")
raises("a rope-unaware flow at another kv_lora_rank",
       lambda: api.trace("rope_unaware_block_sparse_mla",
                         vortex.FlowConfig.mla(256, 64)),
       FlowTraceError, "create_cache", "kv_lora_rank = 256")
tally.exit()
