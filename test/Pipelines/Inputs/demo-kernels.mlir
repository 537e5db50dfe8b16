// A kernel of the kind convert-vortex-to-gpu emits, written by hand: every
// construct the vortex-to-nvvm pipeline must carry down to PTX.
module {
  gpu.module @demo_kernels {
    // One CTA per row: each thread loads 8 bf16 with one 16-byte load, sums
    // them, reduces over clusters of 16 lanes, exponentiates, swaps with its
    // neighbour lane, goes through shared memory and updates a masked tail.
    gpu.func @demo_row(%x: memref<?xbf16>, %out: memref<?xf32>, %n: i32)
        workgroup(%smem: memref<256xf32, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %tid = gpu.thread_id x
      %row = gpu.block_id x
      %c8 = arith.constant 8 : index
      %c256 = arith.constant 256 : index
      %rowbase = arith.muli %row, %c256 : index
      %lane8 = arith.muli %tid, %c8 : index
      %base = arith.addi %rowbase, %lane8 : index
      %v = vector.load %x[%base] {alignment = 16} : memref<?xbf16>, vector<8xbf16>
      %f = arith.extf %v : vector<8xbf16> to vector<8xf32>
      %s = vector.reduction <add>, %f : vector<8xf32> into f32
      %r = gpu.subgroup_reduce add %s cluster(size = 16) : (f32) -> f32
      %e = math.exp %r : f32
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %sw, %ok = gpu.shuffle xor %e, %c1, %c32 : f32
      memref.store %sw, %smem[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c255 = arith.constant 255 : index
      %mirror = arith.subi %c255, %tid : index
      %w = memref.load %smem[%mirror] : memref<256xf32, #gpu.address_space<workgroup>>
      %warp = gpu.subgroup_id : index
      %wi = arith.index_cast %warp : index to i32
      %wf = arith.sitofp %wi : i32 to f32
      %sum = arith.addf %w, %wf : f32
      %c4 = arith.constant 4 : index
      %obase = arith.muli %tid, %c4 : index
      %nidx = arith.index_cast %n : i32 to index
      %left = arith.subi %nidx, %obase : index
      %mask = vector.create_mask %left : vector<4xi1>
      %zero = arith.constant 0.0 : f32
      %old = vector.transfer_read %out[%obase], %zero, %mask {in_bounds = [true]} : memref<?xf32>, vector<4xf32>
      %bc = vector.broadcast %sum : f32 to vector<4xf32>
      %new = arith.addf %old, %bc : vector<4xf32>
      vector.transfer_write %new, %out[%obase], %mask {in_bounds = [true]} : vector<4xf32>, memref<?xf32>
      gpu.return
    }
  }
}
