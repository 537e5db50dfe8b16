#!/usr/bin/env python3
"""Writes block_sparse-style flows of the given attend shapes (for
bench/attend_gpu_check.py): name bs D G T kv_dtype per case."""
import sys

TEMPLATE = """!kv  = !vortex.vtensor<?x{bs}x{d}x{kv}, #vortex.format<paged>>
!q   = !vortex.vtensor<?x{h}x{d}xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x{d}xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x{d}xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x{d}xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @{name}
    config = #vortex.config<block_size = {bs}, page_size = {bs}, head_dim = {d},
        group_size = {g}, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = {kv}>
    fields(centroids = [1, {d}])
cache(%k: !kv, %v: !kv, %centroids: !c) {{
  %c = vortex.mean %k {{dim = 1 : i64}} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {{
  %q_mean = vortex.mean %q {{dim = 1 : i64}} : !q -> !qm
  %score = vortex.gemm %q_mean, %centroids : (!qm, !c) -> !s
  vortex.topk %score into %o : !s into !o
}}
"""

CASES = [
    ("att_bs16_d128_g8_t1_bf16", 16, 128, 8, 1, "bf16"),
    ("att_bs8_d64_g4_t1_bf16", 8, 64, 4, 1, "bf16"),
    ("att_bs64_d256_g2_t1_bf16", 64, 256, 2, 1, "bf16"),
    ("att_bs16_d80_g5_t1_bf16", 16, 80, 5, 1, "bf16"),
    ("att_bs32_d96_g8_t2_bf16", 32, 96, 8, 2, "bf16"),
    ("att_bs16_d128_g8_t1_e4m3", 16, 128, 8, 1, "f8E4M3FN"),
    ("att_bs16_d128_g3_t3_e5m2", 16, 128, 3, 3, "f8E5M2"),
    ("att_bs16_d128_g5_t1_bf16", 16, 128, 5, 1, "bf16"),
    ("att_bs32_d128_g8_t2_bf16", 32, 128, 8, 2, "bf16"),
    ("att_bs64_d64_g3_t3_bf16", 64, 64, 3, 3, "bf16"),
    ("att_bs8_d128_g1_t1_bf16", 8, 128, 1, 1, "bf16"),
    ("att_bs16_d128_g5_t4_bf16", 16, 128, 5, 4, "bf16"),
]

if __name__ == "__main__":
    out = sys.argv[1]
    for name, bs, d, g, t, kv in CASES:
        with open(f"{out}/{name}.mlir", "w") as f:
            f.write(TEMPLATE.format(name=name, bs=bs, d=d, g=g, h=g * t,
                                    kv=kv))
        print(name)
