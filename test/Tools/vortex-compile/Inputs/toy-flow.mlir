// The shape of convert-vortex-to-gpu's output (docs/gpu.md), written by
// hand: one gpu.module of kernels with the descriptor ABI (memref<?xT>
// buffers, i32 scalars) and the version 2 manifest as the module attribute.
// Per step: the arguments in call order, the tensors the step writes, and
// the kernels it launches. The toy's indexer stops at the scores (no top-k
// kernel), so nothing here writes the sparse CSR the step promises; the
// tool does not check that.
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "toy_sparse_attention", backend = "cuda",
  source_hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
  config = {block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = "bf16", kv_dtype = "bf16"},
  symbols = {rows = "dense_kv_indptr", total = "dense_kv_indices", num_blocks = "k", num_new = "block_ids"},
  tensors = {
    q = #vortex.tensor<role = input, dtype = bf16, shape = ["rows", 8, 128]>,
    k = #vortex.tensor<role = cache, dtype = bf16, shape = ["num_blocks", 16, 128]>,
    v = #vortex.tensor<role = cache, dtype = bf16, shape = ["num_blocks", 16, 128]>,
    max = #vortex.tensor<role = cache, dtype = bf16, shape = ["num_blocks", 1, 128]>,
    dense_kv_indptr = #vortex.tensor<role = input, dtype = i32, shape = ["rows+1"]>,
    dense_kv_indices = #vortex.tensor<role = input, dtype = i32, shape = ["total"]>,
    sparse_kv_indptr = #vortex.tensor<role = output, dtype = i32, shape = ["rows+1"]>,
    sparse_kv_indices = #vortex.tensor<role = output, dtype = i32, shape = ["total"]>,
    block_ids = #vortex.tensor<role = input, dtype = i32, shape = ["num_new"]>,
    scratch0 = #vortex.tensor<role = scratch, dtype = f32, shape = ["total", 1, 8]>}, steps = {
    indexer = #vortex.step<args = ["q", "k", "v", "max", "dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices"], writes = ["sparse_kv_indptr", "sparse_kv_indices"],
        launches = [#vortex.launch<kernel = "toy_sparse_attention_indexer_w0", grid = persistent, ctas_per_sm = 4, threads = 256, params = [#vortex.launch_param<name = "q", kind = buffer>,
          #vortex.launch_param<name = "max", kind = buffer>,
          #vortex.launch_param<name = "dense_kv_indices", kind = buffer>,
          #vortex.launch_param<name = "scratch0", kind = buffer>,
          #vortex.launch_param<name = "total", kind = scalar>], reads = ["q", "max", "dense_kv_indices"], writes = ["scratch0"]>]>,
    cache = #vortex.step<args = ["k", "v", "max", "block_ids"], writes = ["max"],
        launches = [#vortex.launch<kernel = "toy_sparse_attention_cache_w0", grid = items, items_of = "num_new", per_cta = 4, threads = 128, params = [#vortex.launch_param<name = "k", kind = buffer>,
          #vortex.launch_param<name = "max", kind = buffer>,
          #vortex.launch_param<name = "block_ids", kind = buffer>,
          #vortex.launch_param<name = "num_new", kind = scalar>], reads = ["k", "block_ids"], writes = ["max"]>]>}>} {
  gpu.module @toy_sparse_attention_kernels {
    // score[pos, g] = exp(q[row, g, :] . max[block, 0, :]) with 32 lanes per
    // (pos, g): each lane reads 4 bf16 of q and of max with 8-byte loads.
    gpu.func @toy_sparse_attention_indexer_w0(
        %q: memref<?xbf16>, %max: memref<?xbf16>, %indices: memref<?xi32>,
        %scratch: memref<?xf32>, %total: i32) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      %tid = gpu.thread_id x
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      %lane = gpu.lane_id
      %g = arith.divui %tid, %c32 : index
      %n = arith.index_cast %total : i32 to index
      %d = arith.muli %lane, %c4 : index
      scf.for %pos = %cta to %n step %ctas {
        %blk32 = memref.load %indices[%pos] : memref<?xi32>
        %blk = arith.index_cast %blk32 : i32 to index
        %qrow = arith.muli %g, %c128 : index
        %qoff = arith.addi %qrow, %d : index
        %qv = vector.load %q[%qoff] {alignment = 8} : memref<?xbf16>, vector<4xbf16>
        %moff0 = arith.muli %blk, %c128 : index
        %moff = arith.addi %moff0, %d : index
        %mv = vector.load %max[%moff] {alignment = 8} : memref<?xbf16>, vector<4xbf16>
        %qf = arith.extf %qv : vector<4xbf16> to vector<4xf32>
        %mf = arith.extf %mv : vector<4xbf16> to vector<4xf32>
        %prod = arith.mulf %qf, %mf : vector<4xf32>
        %part = vector.reduction <add>, %prod : vector<4xf32> into f32
        %dot = gpu.subgroup_reduce add %part : (f32) -> f32
        %score = math.exp %dot : f32
        %first = arith.cmpi eq, %lane, %c0 : index
        scf.if %first {
          %row = arith.muli %pos, %c8 : index
          %out = arith.addi %row, %g : index
          memref.store %score, %scratch[%out] : memref<?xf32>
        }
      }
      gpu.return
    }

    // max[block, 0, :] = max over the 16 rows of k[block]; one warp per
    // block, 4 channels per lane; 4 blocks per CTA.
    gpu.func @toy_sparse_attention_cache_w0(
        %k: memref<?xbf16>, %max: memref<?xbf16>, %ids: memref<?xi32>,
        %num_new: i32) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      %c2048 = arith.constant 2048 : index
      %tid = gpu.thread_id x
      %cta = gpu.block_id x
      %warp = arith.divui %tid, %c32 : index
      %lane = gpu.lane_id
      %ctabase = arith.muli %cta, %c4 : index
      %item = arith.addi %ctabase, %warp : index
      %n = arith.index_cast %num_new : i32 to index
      %live = arith.cmpi ult, %item, %n : index
      scf.if %live {
        %blk32 = memref.load %ids[%item] : memref<?xi32>
        %blk = arith.index_cast %blk32 : i32 to index
        %base = arith.muli %blk, %c2048 : index
        %d = arith.muli %lane, %c4 : index
        %ninf = arith.constant dense<0xFF800000> : vector<4xf32>
        %m = scf.for %r = %c0 to %c16 step %c1 iter_args(%acc = %ninf) -> vector<4xf32> {
          %roff = arith.muli %r, %c128 : index
          %off0 = arith.addi %base, %roff : index
          %off = arith.addi %off0, %d : index
          %kv = vector.load %k[%off] {alignment = 8} : memref<?xbf16>, vector<4xbf16>
          %kf = arith.extf %kv : vector<4xbf16> to vector<4xf32>
          %next = arith.maximumf %acc, %kf : vector<4xf32>
          scf.yield %next : vector<4xf32>
        }
        %mb = arith.truncf %m : vector<4xf32> to vector<4xbf16>
        %moff0 = arith.muli %blk, %c128 : index
        %moff = arith.addi %moff0, %d : index
        vector.store %mb, %max[%moff] {alignment = 8} : memref<?xbf16>, vector<4xbf16>
      }
      gpu.return
    }
  }
}
