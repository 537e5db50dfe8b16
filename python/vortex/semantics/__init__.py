"""The semantics of the ops, apart from any compiled code: the float64
numpy oracle (`reference`, `reference_attention`; they import nothing of
vortex, on purpose), its torch counterpart (`torch_reference`) and eager
mode (`eager`: a vortex_torch flow object run on torch tensors).

This `__init__` imports nothing, so that the oracle stays independent.
"""
