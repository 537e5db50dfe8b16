//===- VortexAttentionOps.td - Decode attention over a CSR -*- tablegen -*-===//
//
// The attention a compiled flow's `attend` step runs over the blocks of a
// CSR (the dense one, or the indexer's selection). Unlike the catalog ops it
// works on builtin tensors: the convert-vortex-to-linalg flow pattern
// generates it into `@<flow>_attend`, and it can be written standalone.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_VORTEXATTENTIONOPS_TD
#define VORTEX_DIALECT_VORTEXATTENTIONOPS_TD

def Vortex_AttendOp : Vortex_Op<"attend", [Pure, AttrSizedOperandSegments]> {
  let summary = "decode attention over the paged k/v blocks of a CSR";
  let description = [{
    Row `r` (one request and KV head) attends over the tokens of its CSR
    entries `kv_indices[kv_indptr[r] .. kv_indptr[r+1])` in CSR order: every
    entry contributes the `block_size` tokens of its pool block except the
    last, which contributes `kv_last_len[r]` (1..block_size; FlashInfer's
    `last_page_len`). Tokens past that never contribute, whatever the pool
    holds there (NaN included).

    `q` is `[rows, T x G, D]` (token-major: head `h = t * G + g`, `G` =
    `group_size`). Query token `t` sees every token of the row's sequence
    but the last `T - 1 - t` (causal over the last `T` tokens). With the
    logits `s_j = sm_scale * <q[r, h], k_j>` over the visible tokens,

        o[r, h]   = sum_j softmax(s)_j * v_j        (q's element type)
        lse[r, h] = ln sum_j exp(s_j)               (f32, natural log)

    A row with no visible token gets `o = 0` and `lse = -inf`. The pools
    `k`, `v` are `[num_blocks, block_size, D]`; block ids must be in range
    (the runtimes check them before the call). The CPU lowering computes in
    f32 with an exact two-pass softmax.

    With `scales(%k_scale, %v_scale)` the pools are packed int4
    (docs/contract.md, "INT4 KV"): `k`, `v` are i8 `[num_blocks, block_size,
    D / 2]`, channel `d` in byte `d / 2` (low nibble for even `d`), read as
    `(nibble - 7) * scale` with `k_scale` `[num_blocks, 1, D]` (per channel)
    and `v_scale` `[num_blocks, block_size, 1]` (per token).

    ```mlir
    %o, %lse = vortex.attend %q, %k, %v, %indptr, %indices, %last, %scale
        {group_size = 8 : i64}
        : (tensor<?x8x128xf32>, tensor<?x16x128xf32>, tensor<?x16x128xf32>,
           tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32)
        -> (tensor<?x8x128xf32>, tensor<?x8xf32>)
    %o, %lse = vortex.attend %q, %k4, %v4, %indptr, %indices, %last, %scale
        scales(%ks, %vs) {group_size = 8 : i64}
        : (tensor<?x8x128xf32>, tensor<?x16x64xi8>, tensor<?x16x64xi8>,
           tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32,
           tensor<?x1x128xf32>, tensor<?x16x1xf32>)
        -> (tensor<?x8x128xf32>, tensor<?x8xf32>)
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$q,
                       RankedTensorOf<[AnyFloat, I8]>:$k,
                       RankedTensorOf<[AnyFloat, I8]>:$v,
                       RankedTensorOf<[I32]>:$kv_indptr,
                       RankedTensorOf<[I32]>:$kv_indices,
                       RankedTensorOf<[I32]>:$kv_last_len,
                       F32:$sm_scale,
                       Optional<RankedTensorOf<[F32]>>:$k_scale,
                       Optional<RankedTensorOf<[F32]>>:$v_scale,
                       ConfinedAttr<I64Attr, [IntPositive]>:$group_size);
  let results = (outs RankedTensorOf<[AnyFloat]>:$o,
                      RankedTensorOf<[F32]>:$lse);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $kv_indptr `,` $kv_indices `,` $kv_last_len `,`
    $sm_scale (`scales` `(` $k_scale^ `,` $v_scale `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// T x G, D and the block size (static: the verifier demands them).
    int64_t getNumHeads() { return getQ().getType().getDimSize(1); }
    int64_t getHeadDim() { return getQ().getType().getDimSize(2); }
    int64_t getBlockSize() { return getK().getType().getDimSize(1); }
    /// T, the query tokens per row.
    int64_t getQueryTokens() { return getNumHeads() / getGroupSize(); }
    /// Whether k and v are packed int4 (with their scales).
    bool isInt4() { return static_cast<bool>(getKScale()); }
  }];
}

#endif // VORTEX_DIALECT_VORTEXATTENTIONOPS_TD
