//===- QAttnOps.td - qattn operations ----------------------*- tablegen -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_DIALECT_QATTN_IR_QATTNOPS_TD
#define QATTN_DIALECT_QATTN_IR_QATTNOPS_TD

include "qattn/Dialect/QAttn/IR/QAttnAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

class QAttn_Op<string mnemonic, list<Trait> traits = []>
    : Op<QAttn_Dialect, mnemonic, traits>;

// Every tensor of the dialect is ranked. The format's shapes derive from the
// sizes; qattn.attention, qattn.dequantize and qattn.progressive_dequantize
// accept dynamic batch, token and page-pool sizes (`?`), the other ops take
// static shapes.
def QAttn_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def QAttn_I8Tensor : RankedTensorOf<[I8]>;
def QAttn_ScaleTensor : RankedTensorOf<[F32, F16]>;
def QAttn_AnyTensor : RankedTensorOf<[F32, F16, BF16, I8]>;

//===----------------------------------------------------------------------===//
// Stage 1
//===----------------------------------------------------------------------===//

def QAttn_QuantizeOp : QAttn_Op<"quantize", [Pure]> {
  let summary = "stage 1: symmetric int8 quantization per block of tokens";
  let description = [{
    Quantizes `input` `[B, H, N, d]` to int8 `data` of the same shape and
    `scales` `[B, H, ceil(N / block)]` (or `[..., d]` with
    `granularity = channel`), as `scheme` (`#qattn.stage1`) and
    docs/FORMAT.md define: `s1 = max|X| / 127`,
    `q8 = clamp(round(X / s1), -127, 127)`.

    ```mlir
    %q8, %s1 = qattn.quantize %k {scheme = #qattn.stage1<block = 64>}
        : tensor<1x8x1000x128xf16> -> tensor<1x8x1000x128xi8>, tensor<1x8x16xf32>
    ```
  }];
  let arguments = (ins QAttn_FloatTensor:$input, QAttn_Stage1Attr:$scheme);
  let results = (outs QAttn_I8Tensor:$data, QAttn_ScaleTensor:$scales);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($data) `,` type($scales)
  }];
  let hasVerifier = 1;
}

def QAttn_DequantizeOp : QAttn_Op<"dequantize", [Pure]> {
  let summary = "inverse of stage 1: int8 times its block scale";
  let description = [{
    Computes `result = f32(data) * scale` with each element's stage-1 scale,
    then converts to the result's element type.

    ```mlir
    %k = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 64>}
        : tensor<1x8x1000x128xi8>, tensor<1x8x16xf32> -> tensor<1x8x1000x128xf32>
    ```
  }];
  let arguments = (ins QAttn_I8Tensor:$data, QAttn_ScaleTensor:$scales,
                       QAttn_Stage1Attr:$scheme);
  let results = (outs QAttn_FloatTensor:$result);
  let assemblyFormat = [{
    $data `,` $scales attr-dict `:` type($data) `,` type($scales) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Stage 2
//===----------------------------------------------------------------------===//

def QAttn_ProgressiveQuantizeOp : QAttn_Op<"progressive_quantize", [Pure]> {
  let summary = "stage 2: compress int8 to packed 2/3/4-bit codes";
  let description = [{
    Compresses stage-1 int8 `input` `[B, H, N, d]` per channel in groups of
    `group` tokens into token-major packed `codes` `[B, N, R]`
    (`R = d * sum(bits) / 8` bytes per token, all heads of a token in one row),
    unsigned integer `scales` and signed `zeros` `[B, H, ceil(N / group), d]`,
    as `scheme` (`#qattn.stage2`) and docs/FORMAT.md define. `fit`
    (`#qattn.fit<minmax>` unless given) picks the encoder of each group's
    scale and zero point; `#qattn.fit<mse>` searches nearby integer pairs for
    the least squared error. The codes decode the same way either way.

    ```mlir
    %p, %s2, %z2 = qattn.progressive_quantize %q8
        {scheme = #qattn.stage2<bits = [4], group = 16>, fit = #qattn.fit<mse>}
        : tensor<1x8x1000x128xi8>
        -> tensor<1x1000x512xi8>, tensor<1x8x63x128xi8>, tensor<1x8x63x128xi8>
    ```
  }];
  let arguments = (ins QAttn_I8Tensor:$input, QAttn_Stage2Attr:$scheme,
                       OptionalAttr<QAttn_Stage2FitAttr>:$fit);
  let results = (outs QAttn_I8Tensor:$codes, QAttn_I8Tensor:$scales,
                      QAttn_I8Tensor:$zeros);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($codes) `,` type($scales) `,` type($zeros)
  }];
  let hasVerifier = 1;
}

def QAttn_ProgressiveDequantizeOp : QAttn_Op<"progressive_dequantize", [Pure]> {
  let summary = "inverse of stage 2: codes back to int8, in integers";
  let description = [{
    Unpacks `codes` `[B, N, R]` and computes `q8' = (q - z2) * s2` per head,
    token and channel into int8 `[B, H, N, d]`. The format guarantees the
    result fits int8, so it can feed an int8 tensor-core product directly.

    ```mlir
    %q8 = qattn.progressive_dequantize %p, %s2, %z2
        {scheme = #qattn.stage2<bits = [4], group = 16>}
        : tensor<1x1000x512xi8>, tensor<1x8x63x128xi8>, tensor<1x8x63x128xi8>
        -> tensor<1x8x1000x128xi8>
    ```
  }];
  let arguments = (ins QAttn_I8Tensor:$codes, QAttn_I8Tensor:$scales,
                       QAttn_I8Tensor:$zeros, QAttn_Stage2Attr:$scheme);
  let results = (outs QAttn_I8Tensor:$result);
  let assemblyFormat = [{
    $codes `,` $scales `,` $zeros attr-dict `:` type($codes) `,` type($scales)
    `,` type($zeros) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Key smoothing
//===----------------------------------------------------------------------===//

def QAttn_SmoothKeysOp : QAttn_Op<"smooth_keys", [Pure]> {
  let summary = "subtract a per-channel key mean (softmax-invariant)";
  let description = [{
    Returns `smoothed = f32(K) - mean` for keys `input` `[B, H, N, d]` and
    the f32 `mean` `[B, H, d]` it subtracted. Either the op computes the mean
    over the calibration tokens `[calibration[0], calibration[1])` of each
    batch, head and channel (an f32 sum in token order divided by the token
    count), or it takes a mean computed earlier as the `using` operand (then
    the `mean` result is that operand), so the keys of later decode steps
    are shifted by the same vector (docs/FORMAT.md).

    Subtracting one vector from every key of a (batch, KV head) adds the
    constant `-scale * q . mean` to each of a query's scores, which the
    softmax cancels: attention over smoothed keys equals attention over the
    original ones, with no correction. Quantizing smoothed keys spends the
    quantization range on the keys' variation instead of a channel's offset.

    ```mlir
    %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 64>}
        : tensor<1x8x1000x128xf16> -> tensor<1x8x1000x128xf32>, tensor<1x8x128xf32>
    %ks1, %mu1 = qattn.smooth_keys %knew using(%mu)
        : tensor<1x8x1x128xf16>, tensor<1x8x128xf32>
        -> tensor<1x8x1x128xf32>, tensor<1x8x128xf32>
    ```
  }];
  let arguments = (ins QAttn_FloatTensor:$input,
                       Optional<RankedTensorOf<[F32]>>:$given_mean,
                       OptionalAttr<DenseI64ArrayAttr>:$calibration);
  let results = (outs RankedTensorOf<[F32]>:$smoothed,
                      RankedTensorOf<[F32]>:$mean);
  let assemblyFormat = [{
    $input (`using` `(` $given_mean^ `)`)? attr-dict `:` type($input)
    (`,` type($given_mean)^)? `->` type($smoothed) `,` type($mean)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Decode buffer
//===----------------------------------------------------------------------===//

def QAttn_BufferAppendOp : QAttn_Op<"buffer_append", [Pure,
    AllTypesMatch<["buffer", "result"]>]> {
  let summary = "quantize new tokens with a fixed scale into the int8 decode buffer";
  let description = [{
    Quantizes `input` `[B, H, T, d]` with the buffer's fixed per-head scale
    `scale` `[B, H]` (`q8 = clamp(round(x / s), -127, 127)`: outliers are
    clamped, the scale never changes) and writes the tokens into `buffer`
    `[B, H, Nb, d]` at token `position`. Requires `position + T <= Nb` at run
    time.

    ```mlir
    %b1 = qattn.buffer_append %x, %s into %b0[%pos]
        : tensor<1x8x1x128xf16>, tensor<1x8xf32> into tensor<1x8x64x128xi8>
    ```
  }];
  let arguments = (ins QAttn_FloatTensor:$input, RankedTensorOf<[F32]>:$scale,
                       QAttn_I8Tensor:$buffer, Index:$position);
  let results = (outs QAttn_I8Tensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `into` $buffer `[` $position `]` attr-dict `:`
    type($input) `,` type($scale) `into` type($buffer)
  }];
  let hasVerifier = 1;
}

def QAttn_BufferFlushOp : QAttn_Op<"buffer_flush", [Pure,
    AllTypesMatch<["codes", "new_codes"]>,
    AllTypesMatch<["block_scales", "new_block_scales"]>,
    AllTypesMatch<["scales", "new_scales"]>,
    AllTypesMatch<["zeros", "new_zeros"]>]> {
  let summary = "compress a full decode buffer to stage 2 into the cache";
  let description = [{
    Compresses the `Nb` int8 tokens of `buffer` `[B, H, Nb, d]` to stage 2
    (`stage2`) and writes them into the cache (`codes` `[B, N, R]`,
    `block_scales` `[B, H, ceil(N / block)]`, `scales` and `zeros`
    `[B, H, ceil(N / group), d]`) at token `position`, which must be a
    multiple of the stage-1 block at run time. The stage-1 scales of the
    written blocks become the buffer's `scale`. `Nb` is a multiple of the
    stage-1 block, itself a multiple of the stage-2 group. `fit` picks the
    stage-2 encoder as on `qattn.progressive_quantize`.

    ```mlir
    %p1, %s1b, %s2b, %z2b = qattn.buffer_flush %buf, %s into %p, %s1, %s2, %z2 [%pos]
        {stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4], group = 16>}
        : tensor<1x8x64x128xi8>, tensor<1x8xf32> into tensor<1x4096x512xi8>,
          tensor<1x8x64xf32>, tensor<1x8x256x128xi8>, tensor<1x8x256x128xi8>
    ```
  }];
  let arguments = (ins QAttn_I8Tensor:$buffer, RankedTensorOf<[F32]>:$scale,
                       QAttn_I8Tensor:$codes, QAttn_ScaleTensor:$block_scales,
                       QAttn_I8Tensor:$scales, QAttn_I8Tensor:$zeros,
                       Index:$position,
                       QAttn_Stage1Attr:$stage1, QAttn_Stage2Attr:$stage2,
                       OptionalAttr<QAttn_Stage2FitAttr>:$fit);
  let results = (outs QAttn_I8Tensor:$new_codes,
                      QAttn_ScaleTensor:$new_block_scales,
                      QAttn_I8Tensor:$new_scales, QAttn_I8Tensor:$new_zeros);
  let assemblyFormat = [{
    $buffer `,` $scale `into` $codes `,` $block_scales `,` $scales `,` $zeros
    `[` $position `]` attr-dict `:` type($buffer) `,` type($scale) `into`
    type($codes) `,` type($block_scales) `,` type($scales) `,` type($zeros)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def QAttn_AttentionOp : QAttn_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "fused attention over quantized query, keys and values";
  let description = [{
    `O = softmax(scale * Q K^T + M) V` per batch and query head, with every
    operand dequantized as its attributes say (docs/FORMAT.md):

    * `q` `[B, Hq, Nq, d]`: float, or int8 with `q_scales` and `q_stage1`;
    * keys: stage-2 codes `[B, Nk, R]` with block scales and group scales and
      zeros (`k_stage1` + `k_stage2`), or stage-1 int8 `[B, Hkv, Nk, d]` with
      block scales (`k_stage1` alone); values likewise;
    * optionally int8 decode buffers `[B, Hkv, Nb, d]` with per-head scales
      `[B, Hkv]`, whose tokens follow the cache's;
    * optionally per-sequence lengths `kv_lens` (i32 `[B]`): sequence `b`
      has `L = kv_lens[b]` keys, its first `L - L mod Nb` in the cache and
      the last `L mod Nb` in buffer rows `0 ..` (all `L` in the cache
      without buffers);
    * optionally a page table `page_table` (i32 `[B, MP]`, with `kv_lens`):
      the K/V operands are then a pool of pages of `P` tokens laid out as
      the contiguous form with batch -> page and tokens -> `P` (codes
      `[NP, P, R]`, scales `[NP, Hkv, P / block]`, ...), and key `j` of
      sequence `b` is row `j mod P` of page `page_table[b, j / P]`. `P` is
      a multiple of the stage-1 blocks; a buffer then holds `Nb = P` tokens
      (the tail page).

    Query head `h` reads KV head `h / (Hq / Hkv)` (grouped-query attention).
    With `causal`, query `i` sees keys `j <= i + (L - Nq)`, `L = Nk + Nb`
    without `kv_lens`; a query that sees no key has output 0. Batch, cache
    capacity, pool size and table width may be dynamic (`?`); heads, head
    dimension, queries, `P` and `Nb` are static. `scale`
    defaults to `1 / sqrt(d)`; `softmax` to `#qattn.softmax<exact>`.
    `gpu_tiling`, set by `qattn-tile`, says how the GPU lowering maps the op
    onto a grid; it does not change the result.

    ```mlir
    %o = qattn.attention %q keys(%kp, %ks1, %ks2, %kz2) values(%vp, %vs1, %vs2, %vz2)
        {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
         v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>,
         causal}
        : (tensor<1x32x1x128xf16>, tensor<1x4096x512xi8>, tensor<1x8x64xf32>,
           tensor<1x8x256x128xi8>, tensor<1x8x256x128xi8>, tensor<1x4096x512xi8>,
           tensor<1x8x64xf32>, tensor<1x8x256x128xi8>, tensor<1x8x256x128xi8>)
          -> tensor<1x32x1x128xf16>
    ```
  }];
  let arguments = (ins
    QAttn_AnyTensor:$q, Optional<QAttn_ScaleTensor>:$q_scales,
    QAttn_I8Tensor:$k, QAttn_ScaleTensor:$k_scales,
    Optional<QAttn_I8Tensor>:$k_group_scales, Optional<QAttn_I8Tensor>:$k_zeros,
    QAttn_I8Tensor:$v, QAttn_ScaleTensor:$v_scales,
    Optional<QAttn_I8Tensor>:$v_group_scales, Optional<QAttn_I8Tensor>:$v_zeros,
    Optional<QAttn_I8Tensor>:$k_buffer, Optional<RankedTensorOf<[F32]>>:$k_buffer_scale,
    Optional<QAttn_I8Tensor>:$v_buffer, Optional<RankedTensorOf<[F32]>>:$v_buffer_scale,
    Optional<RankedTensorOf<[I32]>>:$kv_lens,
    Optional<RankedTensorOf<[I32]>>:$page_table,
    OptionalAttr<QAttn_Stage1Attr>:$q_stage1,
    QAttn_Stage1Attr:$k_stage1, OptionalAttr<QAttn_Stage2Attr>:$k_stage2,
    QAttn_Stage1Attr:$v_stage1, OptionalAttr<QAttn_Stage2Attr>:$v_stage2,
    OptionalAttr<F32Attr>:$scale, UnitAttr:$causal,
    OptionalAttr<QAttn_SoftmaxAttr>:$softmax,
    OptionalAttr<QAttn_GpuTilingAttr>:$gpu_tiling);
  let results = (outs QAttn_FloatTensor:$result);
  let assemblyFormat = [{
    $q (`[` $q_scales^ `]`)?
    `keys` `(` $k `,` $k_scales (`,` $k_group_scales^ `,` $k_zeros)? `)`
    `values` `(` $v `,` $v_scales (`,` $v_group_scales^ `,` $v_zeros)? `)`
    (`buffers` `(` $k_buffer^ `,` $k_buffer_scale `,` $v_buffer `,` $v_buffer_scale `)`)?
    (`lengths` `(` $kv_lens^ `)`)? (`pages` `(` $page_table^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale, `1 / sqrt(d)` unless given.
    float getSoftmaxScale();
    /// The softmax mode, exact unless given.
    SoftmaxAttr getSoftmaxOrDefault();
    int64_t getBatch() { return getResult().getType().getDimSize(0); }
    int64_t getNumQueryHeads() { return getResult().getType().getDimSize(1); }
    int64_t getNumQueries() { return getResult().getType().getDimSize(2); }
    int64_t getHeadDim() { return getResult().getType().getDimSize(3); }
    int64_t getNumKVHeads();
    /// Tokens in the cache operands, without the decode buffer (the page
    /// size in the paged form; may be dynamic).
    int64_t getNumCacheKeys();
    /// Whether the op has the shape-generic serving form the GPU kernels do
    /// not take yet: per-sequence lengths, a page table or a dynamic size.
    bool isShapeGeneric();
    /// Tokens in the decode buffer (0 without one).
    int64_t getNumBufferKeys();
    /// Why the tensor-core prefill kernel (`kernel = mma`) cannot run this
    /// op, or an empty string when it can: BPQ int8 queries and keys with
    /// block scales, one stage-2 width for all heads, no decode buffer,
    /// exact softmax, d of 64 or 128.
    std::string whyNotMmaKernel();
    /// Why the wgmma kernel cannot run P.V on fp8 (`pv = e4m3`), or an
    /// empty string when it can: one V stage-1 scale per 64-key tile (block
    /// granularity, blocks of a multiple of 64 keys), which P then carries.
    std::string whyNotE4m3PV();
  }];
}

include "qattn/Dialect/QAttn/IR/QAttnTileOps.td"

#endif // QATTN_DIALECT_QATTN_IR_QATTNOPS_TD
