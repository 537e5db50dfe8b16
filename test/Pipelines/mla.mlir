// An MLA flow (examples/lserve_centroid_mla.mlir: latent 512 + 64, 20 query
// heads) through the passes: vortex-set-config keeps kv_lora_rank and
// rope_dim; vortex-pad pads the latent's 576 channels to 1024 (and G 20 to
// 32) and vortex-mask-padding masks the padded lanes before the mean over
// heads and the contraction; both back ends lower it, the GPU's with its
// cache and indexer kernels and the attend kernels, which hold the 576
// columns in chunks of 256 (docs/gpu.md "Attention"; attend-wide.mlir has
// their body); attend=off leaves the step out.
//
// RUN: vortex-opt %examples/lserve_centroid_mla.mlir --vortex-set-config="group-size=16" | FileCheck %s --check-prefix=CONFIG
// RUN: vortex-opt %examples/lserve_centroid_mla.mlir --vortex-fuse --vortex-pad --vortex-mask-padding | FileCheck %s --check-prefix=PAD
// RUN: vortex-opt %examples/lserve_centroid_mla.mlir --vortex-to-cpu -o /dev/null
// RUN: vortex-opt %examples/lserve_centroid_mla.mlir --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: vortex-opt %examples/lserve_centroid_mla.mlir --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="attend=off" | FileCheck %s --check-prefix=NOATTEND
// RUN: vortex-opt %examples/lserve_centroid_mla.mlir --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="attend=on" | FileCheck %s --check-prefix=ATTEND

// CONFIG: head_dim = 576, group_size = 16
// CONFIG-SAME: kv_lora_rank = 512, rope_dim = 64>
// CONFIG: indexer(%q: !vortex.vtensor<?x16x576xbf16, #vortex.format<batched>>

// PAD: indexer(%q: !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>, padded = [32, 1024]>
// PAD-SAME: %k: !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>, padded = [32, 1024]>
// PAD: vortex.mask_lanes %q {value = 0.000000e+00 : f32}
// PAD: vortex.mean
// PAD: vortex.mask_lanes {{.*}} padded = [1, 1024]>
// PAD: vortex.mask_lanes %centroids {value = 0.000000e+00 : f32} : <?x2x576xbf16, #vortex.format<paged>, padded = [2, 1024]>

// GPU-DAG: gpu.func @lserve_centroid_mla_cache_w0
// GPU-DAG: gpu.func @lserve_centroid_mla_indexer_w0
// GPU-DAG: gpu.func @lserve_centroid_mla_indexer_topk
// GPU-DAG: gpu.func @lserve_centroid_mla_attend_split
// GPU-DAG: gpu.func @lserve_centroid_mla_attend_combine

// NOATTEND-NOT: _attend_

// ATTEND: gpu.func @lserve_centroid_mla_attend_split(
// ATTEND-SAME: memref<6144xf32, #gpu.address_space<workgroup>>
