"""Vortex inside serving engines (docs/engines.md).

`vortex.integrations.transformers`: `paged|vortex`, a compiled flow as the
paged attention of transformers' continuous batching.
`vortex.integrations.sglang`: a drop-in for the pool, planner and indexer
calls of vortex_torch's SGLang backend, and its plugin hooks.
An engine's package is imported only by the module that needs it.
"""
