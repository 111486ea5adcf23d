//===- QAttnToReference.cpp - qattn ops as plain loops over buffers -------===//
//
// Part of the qattn project.
//
// The executable specification: every qattn op becomes scf loops over
// memrefs doing exactly what docs/FORMAT.md says, element by element. Tensors
// enter and leave through bufferization.to_buffer / to_tensor so the result
// bufferizes with one-shot bufferization. Nothing here is tuned for speed.
//
//===----------------------------------------------------------------------===//

#include "TileToReference.h"

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"
#include "qattn/Conversion/Passes.h"
#include "qattn/Dialect/QAttn/IR/QAttnOps.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNLOWERREFERENCE
#define GEN_PASS_DEF_QATTNEXPORTCINTERFACE
#include "qattn/Conversion/Passes.h.inc"
} // namespace mlir::qattn

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::format;

//===----------------------------------------------------------------------===//
// Loop and buffer helpers
//===----------------------------------------------------------------------===//

/// End of the chunk of `size` tokens starting at chunk index `k` (ragged tail).
static std::pair<Value, Value> chunkBounds(ImplicitLocOpBuilder &b, Value k,
                                           int64_t size, int64_t total) {
  Value start = mulIdx(b, k, size);
  Value end = arith::MinUIOp::create(b, addIdx(b, start, indexConst(b, size)),
                                     indexConst(b, total));
  return {start, end};
}

static Value sext32(ImplicitLocOpBuilder &b, Value v) {
  return arith::ExtSIOp::create(b, b.getI32Type(), v);
}
static Value zext32(ImplicitLocOpBuilder &b, Value v) {
  return arith::ExtUIOp::create(b, b.getI32Type(), v);
}
static Value trunc8(ImplicitLocOpBuilder &b, Value v) {
  return arith::TruncIOp::create(b, b.getI8Type(), v);
}

/// Aborts at run time with `message` unless `cond` holds.
static void runtimeCheck(ImplicitLocOpBuilder &b, Value cond, StringRef message) {
  cf::AssertOp::create(b, cond, b.getStringAttr(message));
}

/// Calls body(h, bits, first byte of head h in a packed row) for every head.
/// Uniform widths loop at run time; mixed widths unroll, since each head's
/// width and byte offset are compile-time constants then.
static void forEachHead(ImplicitLocOpBuilder &b, Stage2Attr scheme,
                        int64_t heads, int64_t headDim,
                        function_ref<void(Value, int64_t, Value)> body) {
  if (scheme.getBits().size() == 1) {
    int64_t bits = scheme.getBits().front();
    forRange(b, indexConst(b, 0), indexConst(b, heads), [&](Value h) {
      body(h, bits, mulIdx(b, h, headDim * bits / 8));
    });
    return;
  }
  for (int64_t h = 0; h < heads; ++h)
    body(indexConst(b, h), scheme.getBitsOfHead(h),
         indexConst(b, scheme.getHeadByteOffset(h, headDim)));
}

//===----------------------------------------------------------------------===//
// Stage 1
//===----------------------------------------------------------------------===//

namespace {
struct LowerQuantize : OpRewritePattern<QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ArrayRef<int64_t> shape = op.getInput().getType().getShape();
    int64_t tokens = shape[2], headDim = shape[3];
    Stage1Attr scheme = op.getScheme();
    Value x = toBuffer(b, op.getInput());
    Value data = allocFor(b, op.getData().getType());
    Value scales = allocFor(b, op.getScales().getType());
    Type scaleType = op.getScales().getType().getElementType();
    bool perChannel = scheme.getGranularity() == Granularity::channel;

    // Quantizes tokens [start, end) x channels [c0, c1) with one scale.
    auto quantizeSet = [&](Value bi, Value h, Value start, Value end, Value c0,
                           Value c1, ValueRange scaleIdx) {
      Value absMax = reduceRange1(b, start, end, f32Const(b, 0.0),
                                  [&](Value t, Value acc) {
        return reduceRange1(b, c0, c1, acc, [&](Value c, Value acc2) {
          Value v = math::AbsFOp::create(b, toF32(b, load(b, x, {bi, h, t, c})));
          return arith::MaximumFOp::create(b, acc2, v);
        });
      });
      auto [stored, s] = stage1Scale(b, absMax, scaleType);
      store(b, stored, scales, scaleIdx);
      forRange(b, start, end, [&](Value t) {
        forRange(b, c0, c1, [&](Value c) {
          Value v = toF32(b, load(b, x, {bi, h, t, c}));
          store(b, quantizeInt8(b, v, s), data, {bi, h, t, c});
        });
      });
    };

    int64_t blocks = llvm::divideCeilSigned(tokens, scheme.getBlock());
    forEachIndex(b, {shape[0], shape[1], blocks}, [&](ValueRange ivs) {
      auto [start, end] = chunkBounds(b, ivs[2], scheme.getBlock(), tokens);
      if (!perChannel)
        return quantizeSet(ivs[0], ivs[1], start, end, indexConst(b, 0),
                           indexConst(b, headDim), ivs);
      forRange(b, indexConst(b, 0), indexConst(b, headDim), [&](Value c) {
        quantizeSet(ivs[0], ivs[1], start, end, c,
                    addIdx(b, c, indexConst(b, 1)),
                    {ivs[0], ivs[1], ivs[2], c});
      });
    });
    rewriter.replaceOp(op, {toTensor(b, data, op.getData().getType()),
                            toTensor(b, scales, op.getScales().getType())});
    return success();
  }
};

struct LowerDequantize : OpRewritePattern<DequantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DequantizeOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType resultType = op.getResult().getType();
    Stage1Attr scheme = op.getScheme();
    Value data = toBuffer(b, op.getData());
    Value scales = toBuffer(b, op.getScales());
    SmallVector<Value> sizes = sizesOf(b, data);
    Value out = allocFor(b, resultType, sizes);
    forEachIndex(b, sizes, [&](ValueRange ivs) {
      Value s = stage1ScaleAt(b, scales, scheme, ivs[0], ivs[1], ivs[2], ivs[3]);
      Value q = arith::SIToFPOp::create(b, b.getF32Type(), load(b, data, ivs));
      Value v = arith::MulFOp::create(b, q, s);
      store(b, fromF32(b, v, resultType.getElementType()), out, ivs);
    });
    rewriter.replaceOp(op, toTensor(b, out, resultType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Key smoothing
//===----------------------------------------------------------------------===//

struct LowerSmoothKeys : OpRewritePattern<SmoothKeysOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SmoothKeysOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ArrayRef<int64_t> shape = op.getInput().getType().getShape();
    Value x = toBuffer(b, op.getInput());
    Value mean;
    if (Value given = op.getGivenMean()) {
      mean = toBuffer(b, given);
    } else {
      // f32 sum in token order, then one true division by the count.
      ArrayRef<int64_t> range = *op.getCalibration();
      mean = allocFor(b, op.getMean().getType());
      Value count = f32Const(b, static_cast<double>(range[1] - range[0]));
      forEachIndex(b, {shape[0], shape[1], shape[3]}, [&](ValueRange ivs) {
        Value sum = reduceRange1(
            b, indexConst(b, range[0]), indexConst(b, range[1]),
            f32Const(b, 0.0), [&](Value t, Value acc) {
              Value v = toF32(b, load(b, x, {ivs[0], ivs[1], t, ivs[2]}));
              return arith::AddFOp::create(b, acc, v);
            });
        store(b, arith::DivFOp::create(b, sum, count), mean, ivs);
      });
    }
    Value out = allocFor(b, op.getSmoothed().getType());
    forEachIndex(b, shape, [&](ValueRange ivs) {
      Value v = toF32(b, load(b, x, ivs));
      Value m = load(b, mean, {ivs[0], ivs[1], ivs[3]});
      store(b, arith::SubFOp::create(b, v, m), out, ivs);
    });
    Value meanTensor = op.getGivenMean()
                           ? op.getGivenMean()
                           : toTensor(b, mean, op.getMean().getType());
    rewriter.replaceOp(op,
                       {toTensor(b, out, op.getSmoothed().getType()), meanTensor});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Stage 2
//===----------------------------------------------------------------------===//

/// Sum over tokens [start, end) of channel c of (q8' - q8)^2 (i64) when the
/// group is encoded with `p`.
static Value stage2SquaredError(ImplicitLocOpBuilder &b, Value in, Value bi,
                                Value h, Value c, Value start, Value end,
                                const Stage2Params &p) {
  return reduceRange1(
      b, start, end, arith::ConstantIntOp::create(b, b.getI64Type(), 0),
      [&](Value t, Value acc) {
        Value q8 = sext32(b, load(b, in, {bi, h, t, c}));
        Value back = stage2Decode(b, stage2Encode(b, q8, p), p.scale, p.zero,
                                  p.anchor);
        Value e = arith::ExtSIOp::create(b, b.getI64Type(),
                                         arith::SubIOp::create(b, back, q8));
        return arith::AddIOp::create(b, acc, arith::MulIOp::create(b, e, e));
      });
}

/// `#qattn.fit<mse>`: the candidate (scale, zero) with the least squared
/// error, the min/max fit `p0` first and kept on ties (docs/FORMAT.md).
static Stage2Params stage2MseFit(ImplicitLocOpBuilder &b, Value in, Value bi,
                                 Value h, Value c, Value start, Value end,
                                 Value mn, const Stage2Params &p0,
                                 int64_t bits) {
  Value bestScale = p0.scale, bestZero = p0.zero;
  Value bestErr = stage2SquaredError(b, in, bi, h, c, start, end, p0);
  for (int64_t ds : kMseScaleOffsets) {
    Value scale = arith::AddIOp::create(b, p0.scale, i32Const(b, ds));
    Value zero0 = stage2Zero(b, mn, scale, p0.anchor);
    for (int64_t dz : kMseZeroOffsets) {
      if (ds == 0 && dz == 0)
        continue;
      Value zero = arith::AddIOp::create(b, zero0, i32Const(b, dz));
      Stage2Params p = stage2Clamp(b, scale, zero, bits, p0.anchor);
      // A candidate must keep z2 in [-127, 127] and leave a code range.
      Value valid = arith::AndIOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::sge, zero,
                                i32Const(b, -127)),
          arith::CmpIOp::create(b, arith::CmpIPredicate::sle, zero,
                                i32Const(b, 127)));
      valid = arith::AndIOp::create(
          b, valid,
          arith::CmpIOp::create(b, arith::CmpIPredicate::sle, p.lo, p.hi));
      Value err = stage2SquaredError(b, in, bi, h, c, start, end, p);
      Value better = arith::AndIOp::create(
          b, valid,
          arith::CmpIOp::create(b, arith::CmpIPredicate::slt, err, bestErr));
      bestScale = arith::SelectOp::create(b, better, scale, bestScale);
      bestZero = arith::SelectOp::create(b, better, zero, bestZero);
      bestErr = arith::SelectOp::create(b, better, err, bestErr);
    }
  }
  return stage2Clamp(b, bestScale, bestZero, bits, p0.anchor);
}

struct LowerProgressiveQuantize : OpRewritePattern<ProgressiveQuantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ProgressiveQuantizeOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ArrayRef<int64_t> shape = op.getInput().getType().getShape();
    int64_t batch = shape[0], tokens = shape[2], headDim = shape[3];
    Stage2Attr scheme = op.getScheme();
    int64_t group = scheme.getGroup();
    bool mse = op.getFit() == Stage2Fit::mse;
    Value in = toBuffer(b, op.getInput());
    Value codes = allocFor(b, op.getCodes().getType());
    Value scales = allocFor(b, op.getScales().getType());
    Value zeros = allocFor(b, op.getZeros().getType());
    // Codes are OR-ed in bit by bit, so the rows start cleared.
    Value zeroByte = arith::ConstantIntOp::create(b, b.getI8Type(), 0);
    forEachIndex(b, op.getCodes().getType().getShape(),
                 [&](ValueRange ivs) { store(b, zeroByte, codes, ivs); });

    int64_t groups = llvm::divideCeilSigned(tokens, group);
    forEachHead(b, scheme, shape[1], headDim,
                [&](Value h, int64_t bits, Value headOffset) {
      forEachIndex(b, {batch, groups, headDim}, [&](ValueRange ivs) {
        Value bi = ivs[0], gi = ivs[1], c = ivs[2];
        auto [start, end] = chunkBounds(b, gi, group, tokens);
        SmallVector<Value> minMax = reduceRange(
            b, start, end, {i32Const(b, 127), i32Const(b, -128)},
            [&](Value t, ValueRange acc) -> SmallVector<Value> {
              Value v = sext32(b, load(b, in, {bi, h, t, c}));
              return {arith::MinSIOp::create(b, acc[0], v),
                      arith::MaxSIOp::create(b, acc[1], v)};
            });
        Stage2Params p =
            stage2Params(b, minMax[0], minMax[1], bits, scheme.getAnchor());
        if (mse)
          p = stage2MseFit(b, in, bi, h, c, start, end, minMax[0], p, bits);
        store(b, trunc8(b, p.scale), scales, {bi, h, gi, c});
        store(b, trunc8(b, p.zero), zeros, {bi, h, gi, c});
        forRange(b, start, end, [&](Value t) {
          Value code = stage2Encode(b, sext32(b, load(b, in, {bi, h, t, c})), p);
          for (int64_t bit = 0; bit < bits; ++bit) {
            BitPosition pos =
                codeBitPosition(b, c, bit, bits, scheme.getOrder());
            Value byteIdx = addIdx(b, headOffset, pos.byte);
            Value v = arith::ShRUIOp::create(b, code, i32Const(b, bit));
            v = arith::AndIOp::create(b, v, i32Const(b, 1));
            v = arith::ShLIOp::create(b, v, pos.shift);
            Value old = load(b, codes, {bi, t, byteIdx});
            store(b, arith::OrIOp::create(b, old, trunc8(b, v)), codes,
                  {bi, t, byteIdx});
          }
        });
      });
    });
    rewriter.replaceOp(op, {toTensor(b, codes, op.getCodes().getType()),
                            toTensor(b, scales, op.getScales().getType()),
                            toTensor(b, zeros, op.getZeros().getType())});
    return success();
  }
};

struct LowerProgressiveDequantize : OpRewritePattern<ProgressiveDequantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ProgressiveDequantizeOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType resultType = op.getResult().getType();
    ArrayRef<int64_t> shape = resultType.getShape();
    Stage2Attr scheme = op.getScheme();
    Value codes = toBuffer(b, op.getCodes());
    Value scales = toBuffer(b, op.getScales());
    Value zeros = toBuffer(b, op.getZeros());
    // [B, N, R] codes: batch and tokens may be dynamic.
    SmallVector<Value> codeSizes = sizesOf(b, codes);
    Value batch = codeSizes[0], tokens = codeSizes[1];
    Value out = allocFor(b, resultType,
                         {batch, Value(), tokens, Value()});
    forEachHead(b, scheme, shape[1], shape[3],
                [&](Value h, int64_t bits, Value headOffset) {
      forEachIndex(b, ValueRange{batch, tokens, indexConst(b, shape[3])},
                   [&](ValueRange ivs) {
        Value bi = ivs[0], t = ivs[1], c = ivs[2];
        Value gi = divIdx(b, t, scheme.getGroup());
        Value s2 = zext32(b, load(b, scales, {bi, h, gi, c}));
        Value z2 = sext32(b, load(b, zeros, {bi, h, gi, c}));
        Value code = unpackCode(b, c, bits, scheme.getOrder(), [&](Value byte) {
          return zext32(b, load(b, codes, {bi, t, addIdx(b, headOffset, byte)}));
        });
        store(b, trunc8(b, stage2Decode(b, code, s2, z2, scheme.getAnchor())),
              out, {bi, h, t, c});
      });
    });
    rewriter.replaceOp(op, toTensor(b, out, resultType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Decode buffer
//===----------------------------------------------------------------------===//

struct LowerBufferAppend : OpRewritePattern<BufferAppendOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BufferAppendOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType bufferType = op.getBuffer().getType();
    ArrayRef<int64_t> inShape = op.getInput().getType().getShape();
    Value pos = op.getPosition();
    Value fits = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ule, addIdx(b, pos, indexConst(b, inShape[2])),
        indexConst(b, bufferType.getDimSize(2)));
    runtimeCheck(b, fits, "qattn.buffer_append: tokens past the buffer's end");
    Value in = toBuffer(b, op.getInput());
    Value scale = toBuffer(b, op.getScale());
    Value out = allocFor(b, bufferType);
    memref::CopyOp::create(b, toBuffer(b, op.getBuffer()), out);
    forEachIndex(b, inShape, [&](ValueRange ivs) {
      Value s = load(b, scale, {ivs[0], ivs[1]});
      Value q = quantizeInt8(b, toF32(b, load(b, in, ivs)), s);
      store(b, q, out, {ivs[0], ivs[1], addIdx(b, pos, ivs[2]), ivs[3]});
    });
    rewriter.replaceOp(op, toTensor(b, out, bufferType));
    return success();
  }
};

/// `dest` (a fresh buffer when null) with `src` written at `offsets`, as
/// loops: a strided memref.copy would need MLIR's runner library at run time.
static Value insertAt(ImplicitLocOpBuilder &b, Value src, Value dest,
                      RankedTensorType resultType, ArrayRef<Value> offsets) {
  Value out = allocFor(b, resultType);
  if (dest)
    memref::CopyOp::create(b, toBuffer(b, dest), out);
  Value from = toBuffer(b, src);
  forEachIndex(b, cast<RankedTensorType>(src.getType()).getShape(),
               [&](ValueRange ivs) {
    SmallVector<Value> to;
    for (auto [iv, off] : llvm::zip(ivs, offsets))
      to.push_back(addIdx(b, iv, off));
    store(b, load(b, from, ivs), out, to);
  });
  return toTensor(b, out, resultType);
}

struct LowerBufferFlush : OpRewritePattern<BufferFlushOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BufferFlushOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Stage1Attr stage1 = op.getStage1();
    Stage2Attr stage2 = op.getStage2();
    ArrayRef<int64_t> bufShape = op.getBuffer().getType().getShape();
    int64_t batch = bufShape[0], heads = bufShape[1], size = bufShape[2],
            headDim = bufShape[3];
    int64_t cacheTokens = op.getCodes().getType().getDimSize(1);
    Value pos = op.getPosition();
    Value aligned = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, pos, indexConst(b, stage1.getBlock())),
        indexConst(b, 0));
    runtimeCheck(b, aligned,
                 "qattn.buffer_flush: position not a multiple of the block");
    Value fits = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                       addIdx(b, pos, indexConst(b, size)),
                                       indexConst(b, cacheTokens));
    runtimeCheck(b, fits, "qattn.buffer_flush: tokens past the cache's end");

    // Stage 2 of the buffer, by the op that defines it, then into the cache.
    int64_t groups = size / stage2.getGroup();
    auto i8 = b.getI8Type();
    auto codesType = RankedTensorType::get(
        {batch, size, stage2.getRowBytes(heads, headDim)}, i8);
    auto groupType = RankedTensorType::get({batch, heads, groups, headDim}, i8);
    auto packed = ProgressiveQuantizeOp::create(
        b, codesType, groupType, groupType, op.getBuffer(), stage2,
        op.getFitAttr());
    Value zero = indexConst(b, 0);
    Value groupPos = divIdx(b, pos, stage2.getGroup());
    Value newCodes = insertAt(b, packed.getCodes(), op.getCodes(),
                              op.getCodes().getType(), {zero, pos, zero});
    Value newScales =
        insertAt(b, packed.getScales(), op.getScales(),
                 op.getScales().getType(), {zero, zero, groupPos, zero});
    Value newZeros = insertAt(b, packed.getZeros(), op.getZeros(),
                              op.getZeros().getType(),
                              {zero, zero, groupPos, zero});

    // The flushed blocks' stage-1 scales are the buffer's fixed scale.
    RankedTensorType blockScalesType = op.getBlockScales().getType();
    Value scale = toBuffer(b, op.getScale());
    Value blockScales = allocFor(b, blockScalesType);
    memref::CopyOp::create(b, toBuffer(b, op.getBlockScales()), blockScales);
    Value blockPos = divIdx(b, pos, stage1.getBlock());
    SmallVector<int64_t> written =
        stage1.getScaleShape({batch, heads, size, headDim});
    forEachIndex(b, written, [&](ValueRange ivs) {
      Value s = load(b, scale, {ivs[0], ivs[1]});
      SmallVector<Value> idx(ivs);
      idx[2] = addIdx(b, blockPos, ivs[2]);
      store(b, fromF32(b, s, blockScalesType.getElementType()), blockScales,
            idx);
    });
    rewriter.replaceOp(op, {newCodes, toTensor(b, blockScales, blockScalesType),
                            newScales, newZeros});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Dequantizes one of K/V to f32 [B, H, N, d] with the dialect's own ops.
static Value dequantizeKV(ImplicitLocOpBuilder &b, Value data, Value scales,
                          Value groupScales, Value zeros, Stage1Attr stage1,
                          Stage2Attr stage2, ArrayRef<int64_t> shape) {
  auto int8Type = RankedTensorType::get(shape, b.getI8Type());
  auto f32Type = RankedTensorType::get(shape, b.getF32Type());
  Value q8 = data;
  if (stage2)
    q8 = ProgressiveDequantizeOp::create(b, int8Type, data, groupScales, zeros,
                                         stage2);
  return DequantizeOp::create(b, f32Type, q8, scales, stage1);
}

namespace {
/// Where key j of a sequence lives: the dequantized cache (per batch entry,
/// or a pool of pages behind a page table) for j < `cacheEnd`, then the
/// int8 decode buffer.
struct KeyLayout {
  Value k, v;              // f32 [B or pages, Hkv, N or P, d]
  Value table;             // i32 [B, MP], or null (contiguous)
  int64_t pageSize = 0;    // P (paged form)
  Value kBuffer, kBufferScale, vBuffer, vBufferScale; // or null
};

/// One sequence's key range: [0, cacheEnd) in the cache, [cacheEnd, keys)
/// in the buffer rows 0, 1, ...
struct SequenceKeys {
  Value keys, cacheEnd;
};
} // namespace

static Value indexOf(ImplicitLocOpBuilder &b, Value i32) {
  return arith::IndexCastOp::create(b, b.getIndexType(), i32);
}

/// The keys of sequence `bi`: all cache and buffer tokens, or kv_lens[bi]
/// split at the last whole buffer (a full buffer has been flushed).
static SequenceKeys sequenceKeys(ImplicitLocOpBuilder &b, AttentionOp op,
                                 Value lens, Value bi, Value cacheTokens) {
  int64_t bufferKeys = op.getNumBufferKeys();
  if (!lens) {
    Value all = addIdx(b, cacheTokens, indexConst(b, bufferKeys));
    return {all, cacheTokens};
  }
  Value keys = indexOf(b, load(b, lens, {bi}));
  if (!bufferKeys)
    return {keys, keys};
  Value tail = remIdx(b, keys, bufferKeys);
  return {keys, arith::SubIOp::create(b, keys, tail)};
}

/// Checks kv_lens and the page table at run time: lengths >= 0, the cache
/// part within the capacity, every page a sequence reads inside the pool.
static void checkSequences(ImplicitLocOpBuilder &b, AttentionOp op, Value lens,
                           const KeyLayout &layout, Value batch,
                           Value cacheTokens, Value pages) {
  if (!lens)
    return;
  Value zero = indexConst(b, 0);
  Value capacity = cacheTokens;
  if (layout.table)
    capacity = arith::MulIOp::create(b, memref::DimOp::create(b, layout.table, 1),
                                     indexConst(b, layout.pageSize));
  forRange(b, zero, batch, [&](Value bi) {
    Value len = load(b, lens, {bi});
    runtimeCheck(b,
                 arith::CmpIOp::create(b, arith::CmpIPredicate::sge, len,
                                       i32Const(b, 0)),
                 "qattn.attention: negative kv_lens entry");
    SequenceKeys seq = sequenceKeys(b, op, lens, bi, cacheTokens);
    runtimeCheck(b,
                 arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                       seq.cacheEnd, capacity),
                 "qattn.attention: kv_lens entry past the cache capacity");
    if (!layout.table)
      return;
    Value used = divIdx(
        b, addIdx(b, seq.cacheEnd, indexConst(b, layout.pageSize - 1)),
        layout.pageSize);
    forRange(b, zero, used, [&](Value p) {
      Value page = load(b, layout.table, {bi, p});
      Value inPool = arith::CmpIOp::create(
          b, arith::CmpIPredicate::ult,
          arith::IndexCastUIOp::create(b, b.getIndexType(), page), pages);
      Value nonNegative = arith::CmpIOp::create(
          b, arith::CmpIPredicate::sge, page, i32Const(b, 0));
      runtimeCheck(b, arith::AndIOp::create(b, inPool, nonNegative),
                   "qattn.attention: page table entry outside the pool");
    });
  });
}

struct LowerAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    int64_t headDim = op.getHeadDim(), kvHeads = op.getNumKVHeads();
    // The cache operands' [batch or pages, Hkv, tokens or P, d].
    auto kScalesType = op.getKScales().getType();
    SmallVector<int64_t> kvShape = {kScalesType.getDimSize(0), kvHeads,
                                    op.getNumCacheKeys(), headDim};

    Value q = op.getQ();
    if (op.getQScales())
      q = DequantizeOp::create(
          b, RankedTensorType::get(op.getQ().getType().getShape(), b.getF32Type()),
          q, op.getQScales(), *op.getQStage1());
    KeyLayout layout;
    layout.k = toBuffer(b, dequantizeKV(b, op.getK(), op.getKScales(),
                                        op.getKGroupScales(), op.getKZeros(),
                                        op.getKStage1(), op.getKStage2Attr(),
                                        kvShape));
    layout.v = toBuffer(b, dequantizeKV(b, op.getV(), op.getVScales(),
                                        op.getVGroupScales(), op.getVZeros(),
                                        op.getVStage1(), op.getVStage2Attr(),
                                        kvShape));
    if (Value table = op.getPageTable()) {
      layout.table = toBuffer(b, table);
      layout.pageSize = op.getNumCacheKeys();
    }
    if (op.getKBuffer()) {
      layout.kBuffer = toBuffer(b, op.getKBuffer());
      layout.kBufferScale = toBuffer(b, op.getKBufferScale());
      layout.vBuffer = toBuffer(b, op.getVBuffer());
      layout.vBufferScale = toBuffer(b, op.getVBufferScale());
    }
    Value lens = op.getKvLens() ? toBuffer(b, op.getKvLens()) : Value();
    Value out = emitFloatAttention(b, op, toBuffer(b, q), layout, lens);
    rewriter.replaceOp(op, toTensor(b, out, op.getResult().getType()));
    return success();
  }

  /// Attention on f32 (or float) buffers: per query row, one pass for the
  /// row maximum, one for the softmax terms and the weighted sum of values,
  /// each over the row's cache keys and then its buffer keys.
  static Value emitFloatAttention(ImplicitLocOpBuilder &b, AttentionOp op,
                                  Value q, const KeyLayout &layout,
                                  Value lens) {
    RankedTensorType resultType = op.getResult().getType();
    int64_t headDim = op.getHeadDim(), queries = op.getNumQueries();
    int64_t groupSize = op.getNumQueryHeads() / op.getNumKVHeads();
    SoftmaxAttr softmax = op.getSoftmaxOrDefault();
    Value scale = f32Const(b, op.getSoftmaxScale());
    SmallVector<Value> qSizes = sizesOf(b, q);
    Value batch = qSizes[0];
    SmallVector<Value> kSizes = sizesOf(b, layout.k);
    Value cacheTokens = kSizes[2];
    checkSequences(b, op, lens, layout, batch, cacheTokens, kSizes[0]);
    Value out = allocFor(b, resultType, qSizes);
    Value acc = memref::AllocaOp::create(
        b, MemRefType::get({headDim}, b.getF32Type()));
    Value zero = indexConst(b, 0), dim = indexConst(b, headDim);

    forEachIndex(b, ValueRange(qSizes).take_front(3), [&](ValueRange ivs) {
      Value bi = ivs[0], h = ivs[1], i = ivs[2];
      Value kvHead = divIdx(b, h, groupSize);
      SequenceKeys seq = sequenceKeys(b, op, lens, bi, cacheTokens);
      Value end = seq.keys;
      if (op.getCausal()) { // query i sees keys j <= i + (keys - queries)
        Value last = arith::SubIOp::create(
            b, addIdx(b, i, seq.keys), indexConst(b, queries - 1));
        end = arith::MinSIOp::create(
            b, arith::MaxSIOp::create(b, last, zero), end);
      }
      Value cacheEnd = arith::MinUIOp::create(b, end, seq.cacheEnd);
      // Where cached key j lives: its page and row (the table read once
      // per key, not per channel).
      auto locate = [&](Value j) -> std::pair<Value, Value> {
        if (!layout.table)
          return {bi, j};
        Value entry =
            load(b, layout.table, {bi, divIdx(b, j, layout.pageSize)});
        return {arith::IndexCastUIOp::create(b, b.getIndexType(), entry),
                remIdx(b, j, layout.pageSize)};
      };
      auto score = [&](function_ref<Value(Value)> key) {
        Value dot = reduceRange1(b, zero, dim, f32Const(b, 0.0),
                                 [&](Value c, Value sum) {
          Value prod = arith::MulFOp::create(
              b, toF32(b, load(b, q, {bi, h, i, c})), key(c));
          return arith::AddFOp::create(b, sum, prod);
        });
        return arith::MulFOp::create(b, scale, dot);
      };
      using Element = function_ref<Value(Value)>; // channel -> f32 value
      // Runs body(key, value) over the cache keys, then the buffer's.
      auto overKeys = [&](Value init,
                          function_ref<Value(Element, Element, Value)> body) {
        Value acc = reduceRange1(b, zero, cacheEnd, init, [&](Value j, Value a) {
          auto [page, row] = locate(j);
          return body(
              [&](Value c) { return load(b, layout.k, {page, kvHead, row, c}); },
              [&](Value c) { return load(b, layout.v, {page, kvHead, row, c}); },
              a);
        });
        if (!layout.kBuffer)
          return acc;
        // The buffer's one scale per head.
        Value kScale = load(b, layout.kBufferScale, {bi, kvHead});
        Value vScale = load(b, layout.vBufferScale, {bi, kvHead});
        return reduceRange1(b, cacheEnd, end, acc, [&](Value j, Value a) {
          Value r = arith::SubIOp::create(b, j, seq.cacheEnd);
          auto buffered = [&](Value buffer, Value scale, Value c) {
            Value q8 = arith::SIToFPOp::create(
                b, b.getF32Type(), load(b, buffer, {bi, kvHead, r, c}));
            return arith::MulFOp::create(b, q8, scale);
          };
          return body(
              [&](Value c) { return buffered(layout.kBuffer, kScale, c); },
              [&](Value c) { return buffered(layout.vBuffer, vScale, c); }, a);
        });
      };
      Value rowMax = overKeys(
          f32Const(b, -INFINITY), [&](Element key, Element, Value m) -> Value {
            return arith::MaximumFOp::create(b, m, score(key));
          });
      forRange(b, zero, dim,
               [&](Value c) { store(b, f32Const(b, 0.0), acc, {c}); });
      Value rowSum = overKeys(
          f32Const(b, 0.0), [&](Element key, Element value, Value sum) -> Value {
            Value x = arith::SubFOp::create(b, score(key), rowMax);
            Value p = softmaxTerm(b, x, softmax);
            forRange(b, zero, dim, [&](Value c) {
              Value pv = arith::MulFOp::create(b, p, value(c));
              store(b, arith::AddFOp::create(b, load(b, acc, {c}), pv), acc, {c});
            });
            return arith::AddFOp::create(b, sum, p);
          });
      // A row that sees no key is 0.
      Value seesKeys =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ne, end, zero);
      forRange(b, zero, dim, [&](Value c) {
        Value o = arith::DivFOp::create(b, load(b, acc, {c}), rowSum);
        o = arith::SelectOp::create(b, seesKeys, o, f32Const(b, 0.0));
        store(b, fromF32(b, o, resultType.getElementType()), out,
              {bi, h, i, c});
      });
    });
    return out;
  }
};

//===----------------------------------------------------------------------===//
// Passes
//===----------------------------------------------------------------------===//

struct QAttnLowerReferencePass
    : qattn::impl::QAttnLowerReferenceBase<QAttnLowerReferencePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerQuantize, LowerDequantize, LowerSmoothKeys,
                 LowerProgressiveQuantize,
                 LowerProgressiveDequantize, LowerBufferAppend,
                 LowerBufferFlush, LowerAttention>(&getContext());
    populateTileToReferencePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (isa<QAttnDialect>(op->getDialect())) {
        op->emitOpError("was not lowered to the reference");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

struct QAttnExportCInterfacePass
    : qattn::impl::QAttnExportCInterfaceBase<QAttnExportCInterfacePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                      UnitAttr::get(&getContext()));
  }
};
} // namespace
