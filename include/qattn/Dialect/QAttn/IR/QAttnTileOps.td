//===- QAttnTileOps.td - the tile layer of qattn ------------*- tablegen -*-===//
//
// Part of the qattn project.
//
// The tile layer: what one program instance of a decode grid does with small
// tiles of the operands (load a tile of the cache, dequantize it, score it,
// update the online softmax) and how the grid's partial rows merge. qattn-tile
// writes these ops inside an scf.forall (the grid) and an scf.for over keys
// with SSA bounds; qattn-pipeline software-pipelines that loop. Each op has
// a reference semantics on tensors (qattn-lower-reference), so the tiled
// program runs on the CPU. On the GPU each grid point is one warp and each
// tile op lowers to that warp's registers and instructions
// (lib/Conversion/QAttnToGPU/Tile*.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_DIALECT_QATTN_IR_QATTNTILEOPS_TD
#define QATTN_DIALECT_QATTN_IR_QATTNTILEOPS_TD

def QAttn_TileTensor : RankedTensorOf<[F32, I8]>;

def QAttn_LoadQueryTileOp : QAttn_Op<"load_query_tile", [Pure]> {
  let summary = "the query rows of one row tile of a KV head, as f32";
  let description = [{
    Row `r` of the result `[R, d]` is the (query, query head) pair
    `p = rt * R + r` of KV head `hk` in batch entry `b`: query `i = p / G`,
    head `hk * G + p mod G` (`G = Hq / Hkv`, given as `group`), dequantized
    to f32 (int8 queries with `q_scales` and `q_stage1`). Rows with
    `p >= G * Nq` are 0.

    ```mlir
    %qt = qattn.load_query_tile %q[%b, %hk, %rt] {group = 4}
        : tensor<?x8x1x64xf16> -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins QAttn_AnyTensor:$q, Optional<QAttn_ScaleTensor>:$q_scales,
                       Index:$batch, Index:$kv_head, Index:$row_tile,
                       I64Attr:$group, OptionalAttr<QAttn_Stage1Attr>:$q_stage1,
                       OptionalAttr<QAttn_FragmentLayoutAttr>:$layout);
  let results = (outs RankedTensorOf<[F32]>:$tile);
  let assemblyFormat = [{
    $q (`scales` `(` $q_scales^ `)`)? `[` $batch `,` $kv_head `,` $row_tile `]`
    attr-dict `:` type($q) (`,` type($q_scales)^)? `->` type($tile)
  }];
  let hasVerifier = 1;
}

def QAttn_LoadKVTileOp : QAttn_Op<"load_kv_tile", [Pure, AttrSizedOperandSegments]> {
  let summary = "the stored bytes and constants of T keys of one KV head";
  let description = [{
    Reads keys `first .. first + T - 1` (`T` = `keys`) of KV head `hk` of
    sequence `b` as they are stored, one of three forms:

    * stage 2 (`stage2` given): `sources` are the codes, stage-1 scales,
      group scales and zeros of `qattn.attention`; results are the head's
      code bytes `[T, Rmax]` (`Rmax` the widest head's bytes per token, the
      rest 0), its group scales and zeros `[Gt, d]` for the `Gt = max(1, T /
      g)` groups the tile touches, and the stage-1 scales `[T]` (`[T, d]`
      with channel granularity);
    * stage 1 (`stage1` alone): `sources` are the int8 data and scales;
      results the int8 tile `[T, d]` and the scales;
    * the int8 decode buffer (neither): `sources` are the buffer `[B, Hkv,
      Nb, d]` and its scale `[B, Hkv]`; key `j` is buffer row `j`; results
      the int8 tile and its scale per key `[T]`.

    With `page_table`, key `j` is row `j mod P` of page `page_table[b, j /
    P]` (`P` the cache operands' token size, a multiple of `T`; `first` is
    then a multiple of `T`); else row `j` of batch entry `b`. Keys at or
    past `bound` are not read: their bytes and scales are 0 (so a tile may
    run past a sequence's end, as a pipelined prologue does). `layout` is
    that of the `qattn.dequantize_tile` that takes the tile: on the GPU
    each lane loads the bytes of its own fragment.

    ```mlir
    %c, %s2, %z2, %s1 = qattn.load_kv_tile %kp, %ks, %ks2, %kz2
        [%b, %hk, %j] bound %end pages(%table : tensor<?x?xi32>)
        {keys = 16, stage1 = #qattn.stage1<block = 64>,
         stage2 = #qattn.stage2<bits = [4], group = 16>}
        : (tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>,
           tensor<?x2x4x64xi8>)
        -> (tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Variadic<RankedTensorOf<[F32, F16, I8]>>:$sources,
                       Optional<RankedTensorOf<[I32]>>:$page_table,
                       Index:$batch, Index:$kv_head, Index:$first, Index:$bound,
                       I64Attr:$keys, OptionalAttr<QAttn_Stage1Attr>:$stage1,
                       OptionalAttr<QAttn_Stage2Attr>:$stage2,
                       OptionalAttr<QAttn_FragmentLayoutAttr>:$layout);
  let results = (outs Variadic<RankedTensorOf<[F32, I8]>>:$tile);
  let assemblyFormat = [{
    $sources `[` $batch `,` $kv_head `,` $first `]` `bound` $bound
    (`pages` `(` $page_table^ `:` type($page_table) `)`)? attr-dict `:`
    `(` type($sources) `)` `->` `(` type($tile) `)`
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The cache operands' tokens per batch entry or page.
    int64_t getTokensPerEntry();
  }];
}

def QAttn_DequantizeTileOp : QAttn_Op<"dequantize_tile", [Pure, AttrSizedOperandSegments]> {
  let summary = "a loaded K/V tile as f32 values";
  let description = [{
    The values `f32(q8') * s1` `[T, d]` of a tile that `qattn.load_kv_tile`
    loaded, taking its results in order: with `stage2`, `q8' = (q - z2) * s2`
    of the codes unpacked as KV head `hk`'s width and bit order (hk is
    needed only for per-head widths), in integers as docs/FORMAT.md says;
    else the int8 tile itself. `layout` names the register fragments the GPU
    lowering produces.

    ```mlir
    %k = qattn.dequantize_tile %c, %s2, %z2, %s1 head(%hk)
        {stage2 = #qattn.stage2<bits = [4], group = 16>,
         layout = #qattn.fragment<mma_keys_a>}
        : tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32>
          -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins Variadic<QAttn_TileTensor>:$parts,
                       Optional<Index>:$kv_head,
                       OptionalAttr<QAttn_Stage2Attr>:$stage2,
                       OptionalAttr<QAttn_FragmentLayoutAttr>:$layout);
  let results = (outs RankedTensorOf<[F32]>:$values);
  let assemblyFormat = [{
    $parts (`head` `(` $kv_head^ `)`)? attr-dict `:` type($parts) `->` type($values)
  }];
  let hasVerifier = 1;
}

def QAttn_TileScoresOp : QAttn_Op<"tile_scores", [Pure]> {
  let summary = "masked scores of a row tile against a key tile";
  let description = [{
    `S[r, t] = scale * sum_c Q[r, c] K[t, c]` for the rows of row tile `rt`
    (as `qattn.load_query_tile` numbers them, `group` pairs per query, `queries`
    queries per sequence) and keys `first + t`; `-inf` where the key is not
    visible: `first + t >= bound`, a row past the tile's pairs, or, with
    `causal`, `first + t > i + length - queries` (each sequence's last query
    sees its last key; `length` is the sequence's keys).

    ```mlir
    %s = qattn.tile_scores %qt, %k [%rt, %j] bound %end length %len
        {scale = 0.125 : f32, group = 4, queries = 1}
        : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x16xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$queries_tile,
                       RankedTensorOf<[F32]>:$keys_tile,
                       Index:$row_tile, Index:$first, Index:$bound,
                       Index:$length, F32Attr:$scale, I64Attr:$group,
                       I64Attr:$queries, UnitAttr:$causal);
  let results = (outs RankedTensorOf<[F32]>:$scores);
  let assemblyFormat = [{
    $queries_tile `,` $keys_tile `[` $row_tile `,` $first `]` `bound` $bound
    `length` $length attr-dict `:` type($queries_tile) `,` type($keys_tile)
    `->` type($scores)
  }];
  let hasVerifier = 1;
}

def QAttn_SoftmaxUpdateOp : QAttn_Op<"softmax_update", [Pure,
    AllTypesMatch<["max", "new_max"]>, AllTypesMatch<["sum", "new_sum"]>,
    AllTypesMatch<["acc", "new_acc"]>]> {
  let summary = "one online-softmax step: fold a score tile and its values in";
  let description = [{
    Per row `r`: `m' = max(m, max_t S[r, t])`, with `ref = m'` (0 while
    `m'` is `-inf`) `c = exp(m - ref)`, `p_t = exp(S[r, t] - ref)`,
    `l' = l c + sum_t p_t` and `acc' = acc c + sum_t p_t V[t, :]` (exact
    softmax, f32). A row that has seen no key keeps `-inf`, 0 and 0.

    With `fixed_max`, `m` is already the row's final max (a first pass of
    `qattn.tile_row_max` found it): `m' = m`, `c = 1`, and the terms are
    `softmax`'s (exact, or SAS, which is defined against the final max).

    With `lazy_max = T` (exact softmax), `m` is a reference rather than the
    running max: it moves to `t = max(m, max_t S[r, t])` only when `t > m +
    T`, else `m' = m`. The result is the same softmax (any reference gives
    consistent `m`, `l` and `acc`), while the terms stay at most `e^T`; on
    the GPU most tiles then skip the row max's shuffles and the rescale (a
    warp-wide vote). `0 < T <= 10`, so that a term fits f16 with room.

    ```mlir
    %m1, %l1, %o1 = qattn.softmax_update %s, %v, %m, %l, %o
        : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>,
          tensor<16x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$scores,
                       RankedTensorOf<[F32]>:$values,
                       RankedTensorOf<[F32]>:$max, RankedTensorOf<[F32]>:$sum,
                       RankedTensorOf<[F32]>:$acc, UnitAttr:$fixed_max,
                       OptionalAttr<QAttn_SoftmaxAttr>:$softmax,
                       OptionalAttr<F32Attr>:$lazy_max);
  let results = (outs RankedTensorOf<[F32]>:$new_max,
                      RankedTensorOf<[F32]>:$new_sum,
                      RankedTensorOf<[F32]>:$new_acc);
  let assemblyFormat = [{
    $scores `,` $values `,` $max `,` $sum `,` $acc attr-dict `:` type($scores)
    `,` type($values) `,` type($max) `,` type($sum) `,` type($acc)
  }];
  let hasVerifier = 1;
}

def QAttn_TileRowMaxOp : QAttn_Op<"tile_row_max", [Pure,
    AllTypesMatch<["max", "new_max"]>]> {
  let summary = "the running max of each row over a score tile";
  let description = [{
    `m'[r] = max(m[r], max_t S[r, t])`: the first pass of a softmax that is
    defined against each row's final max (SAS).

    ```mlir
    %m1 = qattn.tile_row_max %s, %m : tensor<16x16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$scores,
                       RankedTensorOf<[F32]>:$max);
  let results = (outs RankedTensorOf<[F32]>:$new_max);
  let assemblyFormat = [{
    $scores `,` $max attr-dict `:` type($scores) `,` type($max)
  }];
  let hasVerifier = 1;
}

def QAttn_WaitTilesOp : QAttn_Op<"wait_tiles", [AllTypesMatch<["tiles", "ready"]>]> {
  let summary = "wait until tiles loaded ahead have arrived";
  let description = [{
    Returns its operands once the asynchronous loads that produced them are
    complete, leaving the loads of at most `pending` later steps in flight
    (one commit group per step; on the GPU `cp.async.wait_group pending`;
    on the CPU loads are synchronous and this is the identity).
    qattn-pipeline puts one, after the step's own look-ahead loads, before
    each use of a tile it loads ahead.

    ```mlir
    %k = qattn.wait_tiles %k0 {pending = 2} : tensor<16x32xi8>
    ```
  }];
  let arguments = (ins Variadic<QAttn_TileTensor>:$tiles, I64Attr:$pending);
  let results = (outs Variadic<QAttn_TileTensor>:$ready);
  let assemblyFormat = "$tiles attr-dict `:` type($tiles)";
}

def QAttn_KeyChunkOp : QAttn_Op<"key_chunk", [Pure]> {
  let summary = "the slice of a batch's keys that one grid slot takes";
  let description = [{
    Cuts the keys of all sequences into at most `K` = `chunks` chunks of one
    size and returns the one of slot `slot`. With `L_b` = `kv_lens[b]` (`B`
    of them), `W = sum_b L_b`, `T` = `tile_keys` and `n(C) = sum_b ceil(L_b
    / C)` (the chunks of size `C`), the size `C` is the fewest whole tiles
    with `n(C) <= K`: `C0 = T max(1, ceil(W / (K T)))` (at least `W / K`
    keys) where `n(C0) <= K`, else found by bisection over the tiles up to
    `C1 = T max(1, ceil(W / ((K - B) T)))`, which always fits (each
    sequence's last chunk may be short: `n(C1) < (K - B) + B`; `K - B` taken
    as 0 where `K <= B`).
    Sequence `b`'s `ceil(L_b / C)` chunks take slots `o_b, o_b + 1, ...` in
    sequence order (`o_b` the chunks of the sequences before it). Results:
    the sequence `seq` of the slot and its keys `[lo, hi)` = `[j C, min((j
    + 1) C, L_seq))` for `j = slot - o_seq`; a slot past the last chunk gets
    `seq = 0` and `lo = hi = 0`. With `K >= B` every key has a slot below
    `K`, and no slot takes more than about `W / (K - B)` keys however the
    lengths are spread: a long sequence takes many slots, a short one few.
    With all lengths equal (`K = B S`), `C0 = T ceil(L / (S T))`: each
    sequence's keys in the slices a split of S per sequence would take.

    ```mlir
    %seq, %lo, %hi = qattn.key_chunk %kv_lens[%slot] of %chunks
        {tile_keys = 32} : tensor<?xi32>
    ```
  }];
  let arguments = (ins TensorOf<[I32]>:$kv_lens, Index:$slot, Index:$chunks,
                       I64Attr:$tile_keys);
  let results = (outs Index:$seq, Index:$lo, Index:$hi);
  let assemblyFormat = [{
    $kv_lens `[` $slot `]` `of` $chunks attr-dict `:` type($kv_lens)
  }];
  let hasVerifier = 1;
}

def QAttn_CombineSplitsOp : QAttn_Op<"combine_splits", [Pure]> {
  let summary = "merge the key splits' partial rows into the attention output";
  let description = [{
    `acc` `[B, Hkv, RT, S, R, d]`, `max` and `sum` `[B, Hkv, RT, S, R]` hold
    each grid point's unnormalized accumulators, running max and sum for the
    `R` rows of row tile `rt` over key split `s`. Output `[B, Hq, Nq, d]`:
    for query `i` of head `h` (pair `p = i G + h mod G` of KV head `h / G`,
    row tile `p / R`, row `p mod R`), with `M` the largest split max,
    `sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s`, or 0 where no split
    saw a key (`M = -inf`).

    With `chunks(kv_lens)`, the grid points hold the balanced chunks of
    `qattn.key_chunk` instead: point `(b, hk, rt, s)` is slot `c = b S + s`
    of `K = B S` chunks of `tile_keys`-key tiles, and the splits of
    sequence `b` are its chunks' slots `o_b, o_b + 1, ...`, at points
    `(c / S, hk, rt, c mod S)`.

    ```mlir
    %o = qattn.combine_splits %acc, %m, %l {group = 4}
        : tensor<?x2x1x8x16x64xf32>, tensor<?x2x1x8x16xf32>, tensor<?x2x1x8x16xf32>
          -> tensor<?x8x1x64xf16>
    %o2 = qattn.combine_splits %acc, %m, %l chunks(%kv_lens : tensor<?xi32>)
        {group = 4, tile_keys = 32} : ...
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$acc, RankedTensorOf<[F32]>:$max,
                       RankedTensorOf<[F32]>:$sum,
                       Optional<TensorOf<[I32]>>:$kv_lens, I64Attr:$group,
                       OptionalAttr<I64Attr>:$tile_keys);
  let results = (outs QAttn_FloatTensor:$result);
  let assemblyFormat = [{
    $acc `,` $max `,` $sum (`chunks` `(` $kv_lens^ `:` type($kv_lens) `)`)?
    attr-dict `:` type($acc) `,` type($max) `,` type($sum) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // QATTN_DIALECT_QATTN_IR_QATTNTILEOPS_TD
