// A flow with slotted fields (docs/contract.md, "Slotted fields"): the cache
// side writes the block mean of k into the paged field c, and the block max
// of v and a stamp into the slotted fields stage and stamp; the indexer
// scores with c. Used by test/Python/cpu/slotted.py and, on the GPU, by
// test/Python/Inputs/slotted_gpu_check.py.
!kv = !vortex.vtensor<?x4x8xf32, #vortex.format<paged>>
!q = !vortex.vtensor<?x2x8xf32, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!P8 = !vortex.vtensor<?x1x8xf32, #vortex.format<paged>>
!S8 = !vortex.vtensor<?x1x8xf32, #vortex.format<slotted>>
!S1 = !vortex.vtensor<?x1x1xf32, #vortex.format<slotted>>
!P1 = !vortex.vtensor<?x1x1xf32, #vortex.format<paged>>
!R8 = !vortex.vtensor<?x1x8xf32, #vortex.format<ragged>>
!B8 = !vortex.vtensor<?x1x8xf32, #vortex.format<batched>>
!R1 = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
vortex.flow @staged config = #vortex.config<block_size = 4, page_size = 4,
    head_dim = 8, group_size = 2, topk_val = 2, topk_ratio = 0.0,
    reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32,
    kv_dtype = f32> fields(c = [1, 8], stage = [1, 8], stamp = [1, 1])
cache(%k: !kv, %v: !kv, %c: !P8, %stage: !S8, %stamp: !S1) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !R8
  vortex.write %m into %c : !R8 into !P8
  %x = vortex.max %v {dim = 1 : i64} : !kv -> !R8
  vortex.write %x into %stage : !R8 into !S8
  vortex.fill %stamp {value = 1.0 : f32} : !S1
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !P8, %stage: !P8, %stamp: !P1) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !B8
  %s = vortex.gemv %qm, %c : (!B8, !P8) -> !R1
  vortex.topk %s into %o : !R1 into !o
}
