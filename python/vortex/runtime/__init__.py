"""Running compiled flows: the manifest (`manifest`), the attend and decode
contract (`attention`), page tables (`paging`), the numpy CPU path (`cpu`),
the CUDA runtime (`cuda`), the torch ops of both (`ops`) and the native
CUDA launcher (`native`).

This `__init__` imports nothing, so that importing one of them (the
manifest, say) does not import torch or the CUDA runtime.
"""
