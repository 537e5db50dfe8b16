"""Packed INT4 k/v pools (vortex_torch Gen-3; docs/contract.md "INT4 KV").

A pool is bytes `[blocks, block_size, head_dim // 2]`: channel d lives in
byte d // 2, the low nibble for even d and the high nibble for odd d. A value
is quantized symmetrically to 15 levels, q = clamp(round(x / scale), -7, 7)
with rounding half away from zero (libdevice `round`, as vortex_torch), and
stored biased, nibble = q + 7 in [0, 14]; it reads as (nibble - 7) * scale.

Scales are f32, one set per completed block: K per channel,
`k_int4_scale [blocks, 1, head_dim]` (amax over the block's tokens / 7), V
per token, `v_int4_scale [blocks, block_size, 1]` (amax over the channels /
7), both at least 1e-8.

These helpers fill a pool on the host (numpy, the scale math in float64) and
read it back in float64; eager mode and the compiled flows read it with the
same formula.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

__all__ = ["BIAS", "LEVELS", "MIN_SCALE", "SCALE_NAMES", "pack", "unpack",
           "quantize_block", "dequantize_block", "quantize_pool",
           "dequantize_pool"]

BIAS = 7
LEVELS = 15
MIN_SCALE = 1e-8
SCALE_NAMES = {"k": "k_int4_scale", "v": "v_int4_scale"}


def _even_last(name: str, shape: Tuple[int, ...]) -> None:
    if len(shape) < 1 or shape[-1] % 2:
        raise ValueError(f"{name}: the last dimension (head_dim) must be even "
                         f"to pack two channels a byte, got shape "
                         f"{tuple(shape)}")


def pack(nibbles: Any) -> np.ndarray:
    """Nibbles `[..., D]` (integers in [0, 15]) as bytes `[..., D // 2]`:
    even channels in the low nibble."""
    n = np.asarray(nibbles)
    _even_last("nibbles", n.shape)
    if n.size and (n.min() < 0 or n.max() > 15):
        raise ValueError("nibbles: values must lie in [0, 15]")
    n = n.astype(np.uint8)
    return (n[..., 0::2] | (n[..., 1::2] << 4)).astype(np.uint8)


def unpack(packed: Any) -> np.ndarray:
    """Bytes `[..., D // 2]` as their nibbles `[..., D]` (uint8)."""
    p = np.asarray(packed)
    if p.dtype != np.uint8:
        raise ValueError(f"packed: expected uint8 bytes, got {p.dtype}")
    out = np.empty(p.shape[:-1] + (2 * p.shape[-1],), np.uint8)
    out[..., 0::2] = p & 15
    out[..., 1::2] = p >> 4
    return out


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_block(x: Any, per_channel: bool) -> Tuple[np.ndarray, np.ndarray]:
    """Quantize blocks `x [..., block_size, D]` (float) to `(packed [...,
    block_size, D // 2] uint8, scale float32)`: the scale is `[..., 1, D]`
    per channel (K, `per_channel=True`) or `[..., block_size, 1]` per token
    (V). The scale is rounded to f32 before it divides, so dequantizing
    with the stored scale inverts exactly the levels chosen."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim < 2:
        raise ValueError(f"x: expected [..., block_size, head_dim], got shape "
                         f"{a.shape}")
    _even_last("x", a.shape)
    if not np.isfinite(a).all():
        raise ValueError("x: values must be finite")
    axis = -2 if per_channel else -1
    amax = np.abs(a).max(axis=axis, keepdims=True)
    scale = np.maximum(amax / BIAS, MIN_SCALE).astype(np.float32)
    q = np.clip(_round_half_away(a / scale.astype(np.float64)), -BIAS, BIAS)
    return pack((q + BIAS).astype(np.uint8)), scale


def dequantize_block(packed: Any, scale: Any) -> np.ndarray:
    """The float64 values of packed blocks: (nibble - 7) * scale, `scale`
    broadcast as `quantize_block` returns it."""
    n = unpack(packed).astype(np.float64)
    return (n - BIAS) * np.asarray(scale, dtype=np.float64)


def quantize_pool(k: Any, v: Any) -> dict:
    """A float pool pair `k, v [blocks, block_size, D]` as the four cache
    tensors of an int4 flow: `{"k", "v", "k_int4_scale", "v_int4_scale"}`
    (numpy, C-contiguous)."""
    kq, ks = quantize_block(k, per_channel=True)
    vq, vs = quantize_block(v, per_channel=False)
    return {"k": np.ascontiguousarray(kq), "v": np.ascontiguousarray(vq),
            "k_int4_scale": np.ascontiguousarray(ks),
            "v_int4_scale": np.ascontiguousarray(vs)}


def dequantize_pool(cache: Any) -> Tuple[np.ndarray, np.ndarray]:
    """The float64 k and v of an int4 cache dict (as quantize_pool makes)."""
    return (dequantize_block(cache["k"], cache["k_int4_scale"]),
            dequantize_block(cache["v"], cache["v_int4_scale"]))


def dequantize_torch(packed, scale):
    """Eager mode's read of a packed pool (torch, float32)."""
    import torch
    p = packed.to(torch.int32)
    n = torch.stack((p & 15, p >> 4), dim=-1).reshape(
        *p.shape[:-1], 2 * p.shape[-1])
    return (n.to(torch.float32) - BIAS) * scale.to(torch.float32)
