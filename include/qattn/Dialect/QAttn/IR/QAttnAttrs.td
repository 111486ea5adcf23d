//===- QAttnAttrs.td - qattn attributes --------------------*- tablegen -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_DIALECT_QATTN_IR_QATTNATTRS_TD
#define QATTN_DIALECT_QATTN_IR_QATTNATTRS_TD

include "qattn/Dialect/QAttn/IR/QAttnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def QAttn_ScaleType : I32EnumAttr<"ScaleType", "storage type of stage-1 scales", [
    I32EnumAttrCase<"f32", 0>, I32EnumAttrCase<"f16", 1>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_Granularity : I32EnumAttr<"Granularity",
    "what one stage-1 scale covers", [
    I32EnumAttrCase<"block", 0>, I32EnumAttrCase<"channel", 1>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_PackOrder : I32EnumAttr<"PackOrder",
    "bit order of packed stage-2 codes", [
    I32EnumAttrCase<"lsb_first", 0>, I32EnumAttrCase<"msb_first", 1>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_Stage2Anchor : I32EnumAttr<"Stage2Anchor",
    "where the stage-2 grid of a group starts", [
    I32EnumAttrCase<"zero", 0>, I32EnumAttrCase<"min", 1>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_Stage2Fit : I32EnumAttr<"Stage2Fit",
    "how stage-2 quantization picks a group's scale and zero point", [
    I32EnumAttrCase<"minmax", 0>, I32EnumAttrCase<"mse", 1>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_GpuKernel : I32EnumAttr<"GpuKernel", "GPU attention kernel", [
    I32EnumAttrCase<"rows", 0>, I32EnumAttrCase<"mma", 1>,
    I32EnumAttrCase<"wgmma", 3>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_PvOperands : I32EnumAttr<"PvOperands", "P.V operand type", [
    I32EnumAttrCase<"f16", 0>, I32EnumAttrCase<"e4m3", 1>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_TileProducer : I32EnumAttr<"TileProducer",
    "who moves the wgmma kernel's tiles", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"warpgroup", 1>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_SoftmaxMode : I32EnumAttr<"SoftmaxMode", "softmax evaluation", [
    I32EnumAttrCase<"exact", 0>, I32EnumAttrCase<"sas", 1>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

def QAttn_FragmentLayout : I32EnumAttr<"FragmentLayout",
    "how a tile's elements sit in the registers of a warp", [
    I32EnumAttrCase<"row_major", 0>, I32EnumAttrCase<"mma_keys_a", 1>,
    I32EnumAttrCase<"mma_values_a", 2>, I32EnumAttrCase<"mma_queries_b", 3>]> {
  let cppNamespace = "::mlir::qattn";
  let genSpecializedAttr = 0;
}

class QAttn_DefaultEnumParameter<EnumAttrInfo info, string value>
    : EnumParameter<info> {
  let defaultValue = info.cppNamespace # "::" # info.className # "::" # value;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class QAttn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<QAttn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def QAttn_Stage1Attr : QAttn_Attr<"Stage1", "stage1"> {
  let summary = "symmetric int8 quantization per block of tokens";
  let description = [{
    Stage 1 of blockwise progressive quantization: `s1 = max|X| / 127` over
    each block of `block` tokens (and all channels of a head, or one channel
    with `granularity = channel`), `q8 = clamp(round(X / s1), -127, 127)`.
    The scale is stored as `scale` (f32 or f16). The last block of a ragged
    sequence is short.

    ```mlir
    #qattn.stage1<block = 64>
    #qattn.stage1<block = 32, scale = f16, granularity = channel>
    ```
  }];
  let parameters = (ins
    "int64_t":$block,
    QAttn_DefaultEnumParameter<QAttn_ScaleType, "f32">:$scale,
    QAttn_DefaultEnumParameter<QAttn_Granularity, "block">:$granularity);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The element type of the scale tensor.
    ::mlir::FloatType getScaleElementType() const;
    /// The shape of the scale tensor for data of shape [B, H, N, d].
    ::llvm::SmallVector<int64_t> getScaleShape(::llvm::ArrayRef<int64_t> dataShape) const;
  }];
}

def QAttn_BitsParameter : ArrayRefParameter<"int64_t", "bit width per head"> {
  let parser = "::mlir::qattn::parseBitList($_parser)";
  let printer = "::mlir::qattn::printBitList($_printer, $_self)";
}

def QAttn_Stage2Attr : QAttn_Attr<"Stage2", "stage2"> {
  let summary = "asymmetric 2/3/4-bit compression of int8, per channel and token group";
  let description = [{
    Stage 2 of blockwise progressive quantization: per channel over groups of
    `group` tokens, integer scale `s2 = max(1, ceil((max - min) / (2^b - 1)))`
    and zero point `z2 = round(-min / s2)`, codes
    `q = clamp(round(q8 / s2) + z2, lo, hi)` packed `bits` wide in the given
    bit `order`. `bits` holds one width for all heads or one per head
    (headwise mixed precision). Dequantization stays in integers:
    `q8' = (q - z2) * s2`.

    `anchor = min` puts the grid at the group's minimum instead of at
    multiples of `s2`: `z2` holds the minimum itself, codes are
    `q = clamp(round((q8 - z2) / s2), 0, hi)` and dequantize as
    `q8' = z2 + q * s2`, so a group's extremes are kept (docs/FORMAT.md).

    ```mlir
    #qattn.stage2<bits = [4], group = 16>
    #qattn.stage2<bits = [4, 2, 2, 4], group = 32, order = msb_first>
    #qattn.stage2<bits = [3], group = 16, anchor = min>
    ```
  }];
  let parameters = (ins
    QAttn_BitsParameter:$bits,
    "int64_t":$group,
    QAttn_DefaultEnumParameter<QAttn_PackOrder, "lsb_first">:$order,
    QAttn_DefaultEnumParameter<QAttn_Stage2Anchor, "zero">:$anchor);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bit width of head `h` (all heads share a single listed width).
    int64_t getBitsOfHead(int64_t h) const;
    /// Whether `bits` fits `numHeads` heads: one entry, or one per head.
    bool fitsHeads(int64_t numHeads) const;
    /// Byte offset of head `h` inside a packed token row of `headDim` channels.
    int64_t getHeadByteOffset(int64_t h, int64_t headDim) const;
    /// Bytes of one packed token row holding all `numHeads` heads.
    int64_t getRowBytes(int64_t numHeads, int64_t headDim) const;
  }];
}

def QAttn_Stage2FitAttr : EnumAttr<QAttn_Dialect, QAttn_Stage2Fit, "fit"> {
  let summary = "the stage-2 encoder's choice of scale and zero point";
  let description = [{
    `minmax` computes each group's `s2` and `z2` from its minimum and maximum
    (docs/FORMAT.md). `mse` tries nearby integer scales and zero points and
    keeps the pair with the least squared int8 error over the group. Both
    produce the same format: only the encoder differs, never the decoder.

    ```mlir
    #qattn.fit<mse>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def QAttn_FragmentLayoutAttr : EnumAttr<QAttn_Dialect, QAttn_FragmentLayout,
                                         "fragment"> {
  let summary = "register-fragment layout of a tile-layer value";
  let description = [{
    Names the distribution of a tile over a warp's registers that the GPU
    lowering gives it; it does not change the tile's values, and the CPU
    reference ignores it. `mma_keys_a`: a key tile as the A operand of
    `S^T = K Q^T` (mma.sync m16n8k16: lane `4g + t` holds channels
    `[t d/4, (t+1) d/4)` of keys `g` and `8 + g`); `mma_values_a`: a value
    tile as the A operand of `O^T += V^T P^T` (lane `g` holds channels
    `[g d/8, (g+1) d/8)` of keys `2t, 2t+1, 2t+8, 2t+9`); `mma_queries_b`:
    query rows as the B operand (row `8n + g` of the tile in lane `g`'s
    column); `row_major`: no distribution.

    ```mlir
    #qattn.fragment<mma_keys_a>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def QAttn_SoftmaxAttr : QAttn_Attr<"Softmax", "softmax"> {
  let summary = "how the softmax exponentials are evaluated";
  let description = [{
    `exact` evaluates `exp` in f32. `sas` (sparse activated softmax) drops
    terms whose max-subtracted score is below `threshold` and evaluates the
    rest as `LUT[-floor(x)] * P(x - floor(x))`, `P` the degree-`degree`
    polynomial interpolating `exp` at Chebyshev nodes of [0, 1].

    ```mlir
    #qattn.softmax<exact>
    #qattn.softmax<sas, threshold = -6.0, degree = 2>
    ```
  }];
  let parameters = (ins
    EnumParameter<QAttn_SoftmaxMode>:$mode,
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(-6.0)">:$threshold,
    DefaultValuedParameter<"int64_t", "2">:$degree);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def QAttn_GpuTilingAttr : QAttn_Attr<"GpuTiling", "gpu_tiling"> {
  let summary = "how a qattn.attention maps onto a GPU grid";
  let description = [{
    Chosen by `qattn-tile` for the attentions that do not go through the
    tile layer (prefill, and decode in formats the tile ops' GPU lowering
    lacks), consumed by `qattn-convert-to-gpu`. Each warp
    owns query `i` of every query head that shares one KV head (so each key
    and value is loaded and dequantized once for the grouped-query heads); a
    CTA holds `warps` such warps, and the keys are cut into `splits` slices
    processed by separate CTAs, merged by a combine kernel (flash-decoding)
    when `splits > 1`. A warp loads `keys_per_step` keys (and their values)
    before it reduces any of their scores, so that many loads are in flight.
    `stages` (set by `qattn-pipeline`) is the depth of the software pipeline
    of that key stream: with 2, the next step's keys and values are loaded
    before the current step's scores are reduced.

    `kernel = mma` selects the tensor-core prefill kernel instead (BPQ int8
    queries, d of 64 or 128): a stage launch decodes K to int8 codes with
    one scale per key and V to f16 once into scratch; then CTAs of `warps`
    warps own 16 query rows of one head per warp and stream the keys in
    tiles of 64 through a ring of `stages` (1 to 4) slots of dynamic shared
    memory that cp.async fills `stages - 1` tiles ahead; QK^T runs as int8
    mma.sync (m16n8k32) and P.V as f16 mma.sync (m16n8k16), both fed by
    ldmatrix. `splits` must be 1 and `keys_per_step` does not apply.

    `kernel = wgmma` is the same prefill computation on Hopper's warpgroup
    MMA: each warpgroup (4 warps) of a CTA owns 64 query rows, and all share
    one ring. The stage launch writes each tile as a ring slot's image (V
    transposed), which bulk copies move into swizzled K and V^T slots read by
    wgmma through shared-memory descriptors; QK^T runs as wgmma m64n64k32
    (s8) with the queries copied once into shared memory, and P.V as wgmma
    m64n{d}k16 (f16) with P from registers. With one warpgroup and 3 or 4
    stages the loop overlaps: the next tile's QK^T and this tile's P.V go
    out together, and the next tile's softmax runs while P.V is in flight;
    d = 64 needs that (the conversion rejects other tilings there).

    `pv = e4m3` (wgmma only) runs P.V on fp8 instead: V as its int8 stage-1
    codes rounded to e4m3 (exact up to 16 in magnitude, 3 mantissa bits
    beyond), P as e4m3 scaled by the tile's V scale and a power of two that
    keeps it within e4m3's range, wgmma m64n{d}k32; the tensor cores do it at
    twice the f16 rate and the V ring is half the size, at a relative
    rounding error up to 2^-4 on each of P and V. It needs V stage-1 blocks of whole 64-key tiles.

    `producer = warpgroup` (wgmma, 8 warps, 3 or 4 stages) adds a producer
    warpgroup of 4 more warps, first in the CTA, whose one thread refills
    the ring; it keeps 24 registers a thread and gives the rest to the 8
    warps that compute (240 each, `setmaxnreg`), which run the overlapped
    loop. One CTA per SM.

    ```mlir
    #qattn.gpu_tiling<warps = 4, splits = 16>
    #qattn.gpu_tiling<warps = 4, splits = 16, keys_per_step = 4, stages = 2>
    #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2>
    #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2>
    #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>
    #qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 4, producer = warpgroup>
    ```
  }];
  let parameters = (ins "int64_t":$warps, "int64_t":$splits,
                        DefaultValuedParameter<"int64_t", "8">:$keys_per_step,
                        QAttn_DefaultEnumParameter<QAttn_GpuKernel, "rows">:$kernel,
                        DefaultValuedParameter<"int64_t", "1">:$stages,
                        QAttn_DefaultEnumParameter<QAttn_PvOperands, "f16">:$pv,
                        QAttn_DefaultEnumParameter<QAttn_TileProducer, "none">:$producer);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // QATTN_DIALECT_QATTN_IR_QATTNATTRS_TD
