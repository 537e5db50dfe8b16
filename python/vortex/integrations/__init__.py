"""Vortex inside serving engines (docs/engines.md).

`vortex.integrations.transformers`: `paged|vortex`, a compiled flow as the
paged attention of transformers' continuous batching. The engine's package
is imported only by the module that needs it.
"""
