//===- TileToReference.cpp - the tile layer as plain loops ----------------===//
//
// Part of the qattn project.
//
// The reference semantics of the tile-layer ops (QAttnTileOps.td): loops over
// buffers doing what each op's description says, element by element, so a
// tiled and pipelined decode program runs on the CPU and can be checked
// against the executable specification. Layout attributes are ignored here.
//
//===----------------------------------------------------------------------===//

#include "TileToReference.h"

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"
#include "qattn/Dialect/QAttn/IR/QAttnOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::format;

namespace {
Value cmp(ImplicitLocOpBuilder &b, arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, p, x, y);
}
Value minU(ImplicitLocOpBuilder &b, Value x, Value y) {
  return arith::MinUIOp::create(b, x, y);
}
Value select(ImplicitLocOpBuilder &b, Value c, Value x, Value y) {
  return arith::SelectOp::create(b, c, x, y);
}
/// A fresh tile buffer of `type` filled with zeros.
Value zeroTile(ImplicitLocOpBuilder &b, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  Value zero = arith::ConstantOp::create(
      b, b.getZeroAttr(tensor.getElementType()));
  Value buffer = allocFor(b, type);
  forEachIndex(b, tensor.getShape(),
               [&](ValueRange ivs) { store(b, zero, buffer, ivs); });
  return buffer;
}
/// max(init, max_t scores[r, t]) over the `keys` columns of row `r`.
Value rowMax(ImplicitLocOpBuilder &b, Value scores, Value r, int64_t keys,
             Value init) {
  return reduceRange1(b, indexConst(b, 0), indexConst(b, keys), init,
                      [&](Value t, Value x) {
                        return arith::MaximumFOp::create(b, x,
                                                         load(b, scores, {r, t}));
                      });
}

//===----------------------------------------------------------------------===//
// Loads
//===----------------------------------------------------------------------===//

struct LowerLoadQueryTile : OpRewritePattern<LoadQueryTileOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadQueryTileOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType type = op.getTile().getType();
    int64_t rows = type.getDimSize(0), d = type.getDimSize(1);
    int64_t group = op.getGroup(), pairs = group * op.getQ().getType().getDimSize(2);
    Value q = toBuffer(b, op.getQ());
    Value scales = op.getQScales() ? toBuffer(b, op.getQScales()) : Value();
    Value out = allocFor(b, type);
    forEachIndex(b, {rows, d}, [&](ValueRange ivs) {
      Value p = addIdx(b, mulIdx(b, op.getRowTile(), rows), ivs[0]);
      Value valid = cmp(b, arith::CmpIPredicate::ult, p, indexConst(b, pairs));
      Value pc = minU(b, p, indexConst(b, pairs - 1));
      Value i = divIdx(b, pc, group);
      Value h = addIdx(b, mulIdx(b, op.getKvHead(), group), remIdx(b, pc, group));
      Value x = load(b, q, {op.getBatch(), h, i, ivs[1]});
      Value v;
      if (scales)
        v = arith::MulFOp::create(
            b, arith::SIToFPOp::create(b, b.getF32Type(), x),
            stage1ScaleAt(b, scales, *op.getQStage1(), op.getBatch(), h, i, ivs[1]));
      else
        v = toF32(b, x);
      store(b, select(b, valid, v, f32Const(b, 0.0)), out, ivs);
    });
    rewriter.replaceOp(op, toTensor(b, out, type));
    return success();
  }
};

struct LowerLoadKVTile : OpRewritePattern<LoadKVTileOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadKVTileOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    int64_t keys = op.getKeys();
    Stage1Attr s1 = op.getStage1Attr();
    Stage2Attr s2 = op.getStage2Attr();
    SmallVector<Value> src;
    for (Value v : op.getSources())
      src.push_back(toBuffer(b, v));
    Value table = op.getPageTable() ? toBuffer(b, op.getPageTable()) : Value();
    int64_t page = op.getTokensPerEntry();
    SmallVector<Value> tiles;
    for (Value t : op.getTile())
      tiles.push_back(zeroTile(b, t.getType()));
    Value bi = op.getBatch(), hk = op.getKvHead();
    // Key j's batch entry or page, and its row there (only for j < bound).
    auto locate = [&](Value j) -> std::pair<Value, Value> {
      if (!table)
        return {bi, j};
      Value entry = load(b, table, {bi, divIdx(b, j, page)});
      return {arith::IndexCastUIOp::create(b, b.getIndexType(), entry),
              remIdx(b, j, page)};
    };
    // Channels of an int8 tile (the stage-2 tile holds bytes instead).
    int64_t d = s2 ? 0
                   : cast<RankedTensorType>(op.getTile()[0].getType()).getDimSize(1);
    Value scaleTile = tiles.back();
    bool channel = s1 && s1.getGranularity() == Granularity::channel;
    // The head's code bytes in a packed row: offset and width by hk (per-head
    // widths), the same for every key.
    Value offset, width;
    if (s2) {
      int64_t heads = cast<MemRefType>(src[1].getType()).getDimSize(1);
      int64_t hd = cast<MemRefType>(src[2].getType()).getDimSize(3);
      offset = selectPerHead(b, hk, heads, [&](int64_t h) {
        return s2.getHeadByteOffset(h, hd);
      });
      width = selectPerHead(b, hk, heads, [&](int64_t h) {
        return hd * s2.getBitsOfHead(h) / 8;
      });
    }
    forRange(b, indexConst(b, 0), indexConst(b, keys), [&](Value t) {
      Value j = addIdx(b, op.getFirst(), t);
      ifThen(b, cmp(b, arith::CmpIPredicate::ult, j, op.getBound()), [&] {
        if (!s1) { // the decode buffer: row j, one scale per head
          forRange(b, indexConst(b, 0), indexConst(b, d), [&](Value c) {
            store(b, load(b, src[0], {bi, hk, j, c}), tiles[0], {t, c});
          });
          store(b, load(b, src[1], {bi, hk}), scaleTile, {t});
          return;
        }
        auto [entry, row] = locate(j);
        if (channel) {
          int64_t dd = cast<RankedTensorType>(scaleTile.getType()).getDimSize(1);
          forRange(b, indexConst(b, 0), indexConst(b, dd), [&](Value c) {
            store(b, stage1ScaleAt(b, src[1], s1, entry, hk, row, c), scaleTile,
                  {t, c});
          });
        } else {
          store(b, stage1ScaleAt(b, src[1], s1, entry, hk, row, Value()),
                scaleTile, {t});
        }
        if (!s2) {
          forRange(b, indexConst(b, 0), indexConst(b, d), [&](Value c) {
            store(b, load(b, src[0], {entry, hk, row, c}), tiles[0], {t, c});
          });
          return;
        }
        forRange(b, indexConst(b, 0), width, [&](Value x) {
          store(b, load(b, src[0], {entry, row, addIdx(b, offset, x)}), tiles[0],
                {t, x});
        });
      });
    });
    if (s2) {
      // Group constants: tile group u covers keys from u * g (one group when
      // the group is longer than the tile).
      int64_t g = s2.getGroup();
      int64_t groups = cast<RankedTensorType>(op.getTile()[1].getType()).getDimSize(0);
      int64_t hd = cast<RankedTensorType>(op.getTile()[1].getType()).getDimSize(1);
      forRange(b, indexConst(b, 0), indexConst(b, groups), [&](Value u) {
        Value j = addIdx(b, op.getFirst(), mulIdx(b, u, std::min(g, keys)));
        ifThen(b, cmp(b, arith::CmpIPredicate::ult, j, op.getBound()), [&] {
          auto [entry, row] = locate(j);
          Value gi = divIdx(b, row, g);
          forRange(b, indexConst(b, 0), indexConst(b, hd), [&](Value c) {
            store(b, load(b, src[2], {entry, hk, gi, c}), tiles[1], {u, c});
            store(b, load(b, src[3], {entry, hk, gi, c}), tiles[2], {u, c});
          });
        });
      });
    }
    SmallVector<Value> results;
    for (auto [buffer, result] : llvm::zip(tiles, op.getTile()))
      results.push_back(toTensor(b, buffer, result.getType()));
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Dequantization, scores, the online softmax
//===----------------------------------------------------------------------===//

struct LowerDequantizeTile : OpRewritePattern<DequantizeTileOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DequantizeTileOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType type = op.getValues().getType();
    int64_t keys = type.getDimSize(0), d = type.getDimSize(1);
    SmallVector<Value> parts;
    for (Value v : op.getParts())
      parts.push_back(toBuffer(b, v));
    Value scales = parts.back();
    bool channel = cast<MemRefType>(scales.getType()).getRank() == 2;
    Value out = allocFor(b, type);
    auto scaleAt = [&](Value t, Value c) {
      return channel ? load(b, scales, {t, c}) : load(b, scales, {t});
    };
    Stage2Attr s2 = op.getStage2Attr();
    if (!s2) {
      forEachIndex(b, {keys, d}, [&](ValueRange ivs) {
        Value q8 = arith::SIToFPOp::create(b, b.getF32Type(),
                                           load(b, parts[0], ivs));
        store(b, arith::MulFOp::create(b, q8, scaleAt(ivs[0], ivs[1])), out, ivs);
      });
      rewriter.replaceOp(op, toTensor(b, out, type));
      return success();
    }
    int64_t g = s2.getGroup();
    auto decodeWith = [&](int64_t bits) {
      forEachIndex(b, {keys, d}, [&](ValueRange ivs) {
        Value t = ivs[0], c = ivs[1];
        Value u = g < keys ? divIdx(b, t, g) : indexConst(b, 0);
        Value code = unpackCode(b, c, bits, s2.getOrder(), [&](Value byte) {
          return arith::ExtUIOp::create(b, b.getI32Type(),
                                        load(b, parts[0], {t, byte}));
        });
        Value sc = arith::ExtUIOp::create(b, b.getI32Type(), load(b, parts[1], {u, c}));
        Value z = arith::ExtSIOp::create(b, b.getI32Type(), load(b, parts[2], {u, c}));
        Value q8 = arith::TruncIOp::create(
            b, b.getI8Type(), stage2Decode(b, code, sc, z, s2.getAnchor()));
        Value x = arith::SIToFPOp::create(b, b.getF32Type(), q8);
        store(b, arith::MulFOp::create(b, x, scaleAt(t, c)), out, ivs);
      });
    };
    ArrayRef<int64_t> bits = s2.getBits();
    if (bits.size() == 1) {
      decodeWith(bits.front());
    } else {
      // Per-head widths: one decode per width, taken by the head's.
      Value width = selectPerHead(b, op.getKvHead(), bits.size(),
                            [&](int64_t h) { return bits[h]; });
      SmallVector<int64_t> widths(bits);
      llvm::sort(widths);
      widths.erase(llvm::unique(widths), widths.end());
      for (int64_t w : widths)
        ifThen(b, cmp(b, arith::CmpIPredicate::eq, width, indexConst(b, w)),
               [&] { decodeWith(w); });
    }
    rewriter.replaceOp(op, toTensor(b, out, type));
    return success();
  }
};

struct LowerTileScores : OpRewritePattern<TileScoresOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileScoresOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType type = op.getScores().getType();
    int64_t rows = type.getDimSize(0), keys = type.getDimSize(1);
    int64_t d = op.getQueriesTile().getType().getDimSize(1);
    int64_t group = op.getGroup(), queries = op.getQueries();
    Value q = toBuffer(b, op.getQueriesTile());
    Value k = toBuffer(b, op.getKeysTile());
    Value out = allocFor(b, type);
    Value scale = f32Const(b, op.getScale().convertToFloat());
    forEachIndex(b, {rows, keys}, [&](ValueRange ivs) {
      Value r = ivs[0], t = ivs[1];
      Value p = addIdx(b, mulIdx(b, op.getRowTile(), rows), r);
      Value key = addIdx(b, op.getFirst(), t);
      Value visible = arith::AndIOp::create(
          b, cmp(b, arith::CmpIPredicate::ult, p, indexConst(b, group * queries)),
          cmp(b, arith::CmpIPredicate::ult, key, op.getBound()));
      if (op.getCausal()) { // key <= i + length - queries
        Value i = divIdx(b, p, group);
        visible = arith::AndIOp::create(
            b, visible,
            cmp(b, arith::CmpIPredicate::ule, addIdx(b, key, indexConst(b, queries)),
                addIdx(b, i, op.getLength())));
      }
      Value dot = reduceRange1(b, indexConst(b, 0), indexConst(b, d),
                               f32Const(b, 0.0), [&](Value c, Value sum) {
        Value prod = arith::MulFOp::create(b, load(b, q, {r, c}), load(b, k, {t, c}));
        return arith::AddFOp::create(b, sum, prod);
      });
      store(b,
            select(b, visible, arith::MulFOp::create(b, scale, dot),
                   f32Const(b, -INFINITY)),
            out, ivs);
    });
    rewriter.replaceOp(op, toTensor(b, out, type));
    return success();
  }
};

struct LowerSoftmaxUpdate : OpRewritePattern<SoftmaxUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxUpdateOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto scoresType = op.getScores().getType();
    int64_t rows = scoresType.getDimSize(0), keys = scoresType.getDimSize(1);
    int64_t d = op.getValues().getType().getDimSize(1);
    Value s = toBuffer(b, op.getScores()), v = toBuffer(b, op.getValues());
    Value m = toBuffer(b, op.getMax()), l = toBuffer(b, op.getSum());
    Value acc = toBuffer(b, op.getAcc());
    Value mOut = allocFor(b, op.getMax().getType());
    Value lOut = allocFor(b, op.getSum().getType());
    Value accOut = allocFor(b, op.getAcc().getType());
    Value zero = indexConst(b, 0), nk = indexConst(b, keys);
    SoftmaxAttr softmax = op.getSoftmaxAttr();
    bool fixed = op.getFixedMax();
    forRange(b, zero, indexConst(b, rows), [&](Value r) {
      Value old = load(b, m, {r});
      Value mx = fixed ? old : rowMax(b, s, r, keys, old);
      // A lazy reference moves only when a score passes it by more than T.
      if (std::optional<APFloat> lazy = op.getLazyMax()) {
        Value bar =
            arith::AddFOp::create(b, old, f32Const(b, lazy->convertToDouble()));
        mx = select(
            b, arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, mx, bar), mx,
            old);
      }
      Value ref = finiteRef(b, mx);
      auto term = [&](Value x) -> Value {
        Value shifted = arith::SubFOp::create(b, x, ref);
        if (softmax)
          return softmaxTerm(b, shifted, softmax);
        return math::ExpOp::create(b, shifted);
      };
      Value corr = fixed ? f32Const(b, 1.0) : term(old);
      Value sum = reduceRange1(
          b, zero, nk, arith::MulFOp::create(b, load(b, l, {r}), corr),
          [&](Value t, Value x) {
            return arith::AddFOp::create(b, x, term(load(b, s, {r, t})));
          });
      store(b, mx, mOut, {r});
      store(b, sum, lOut, {r});
      forRange(b, zero, indexConst(b, d), [&](Value c) {
        Value a = reduceRange1(
            b, zero, nk, arith::MulFOp::create(b, load(b, acc, {r, c}), corr),
            [&](Value t, Value x) {
              Value pv = arith::MulFOp::create(b, term(load(b, s, {r, t})),
                                               load(b, v, {t, c}));
              return arith::AddFOp::create(b, x, pv);
            });
        store(b, a, accOut, {r, c});
      });
    });
    rewriter.replaceOp(op, {toTensor(b, mOut, op.getMax().getType()),
                            toTensor(b, lOut, op.getSum().getType()),
                            toTensor(b, accOut, op.getAcc().getType())});
    return success();
  }
};

struct LowerTileRowMax : OpRewritePattern<TileRowMaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileRowMaxOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = op.getScores().getType();
    Value s = toBuffer(b, op.getScores()), m = toBuffer(b, op.getMax());
    Value out = allocFor(b, op.getMax().getType());
    forRange(b, indexConst(b, 0), indexConst(b, type.getDimSize(0)),
             [&](Value r) {
               store(b, rowMax(b, s, r, type.getDimSize(1), load(b, m, {r})),
                     out, {r});
             });
    rewriter.replaceOp(op, toTensor(b, out, op.getMax().getType()));
    return success();
  }
};

struct LowerWaitTiles : OpRewritePattern<WaitTilesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(WaitTilesOp op,
                                PatternRewriter &rewriter) const override {
    // Loads are synchronous here.
    rewriter.replaceOp(op, op.getTiles());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Balanced key chunks
//===----------------------------------------------------------------------===//

/// The chunks of qattn.key_chunk over the lengths `lens` (a memref of i32).
struct Chunks {
  Value lens, batch, size;

  Chunks(ImplicitLocOpBuilder &b, Value lens, Value chunks, int64_t tileKeys)
      : lens(lens), batch(sizesOf(b, lens)[0]) {
    Value total = reduceRange1(
        b, indexConst(b, 0), batch, indexConst(b, 0),
        [&](Value i, Value sum) { return addIdx(b, sum, length(b, i)); });
    size = balancedChunkKeys(b, total, batch, chunks, tileKeys, [&](Value c) {
      return reduceRange1(b, indexConst(b, 0), batch, indexConst(b, 0),
                          [&](Value i, Value sum) {
                            return addIdx(
                                b, sum,
                                arith::CeilDivUIOp::create(b, length(b, i), c));
                          });
    });
  }
  Value length(ImplicitLocOpBuilder &b, Value seq) const {
    return arith::IndexCastUIOp::create(b, b.getIndexType(),
                                        load(b, lens, seq));
  }
  Value count(ImplicitLocOpBuilder &b, Value seq) const {
    return arith::CeilDivUIOp::create(b, length(b, seq), size);
  }
  /// The first slot of sequence `seq`'s chunks.
  Value first(ImplicitLocOpBuilder &b, Value seq) const {
    return reduceRange1(
        b, indexConst(b, 0), seq, indexConst(b, 0),
        [&](Value i, Value sum) { return addIdx(b, sum, count(b, i)); });
  }
};

struct LowerKeyChunk : OpRewritePattern<KeyChunkOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KeyChunkOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Chunks chunks(b, toBuffer(b, op.getKvLens()), op.getChunks(),
                  op.getTileKeys());
    Value zero = indexConst(b, 0), slot = op.getSlot();
    // Walk the sequences' slot ranges; the one holding `slot` sets the
    // results (seq 0 and no keys where none does).
    SmallVector<Value> found = reduceRange(
        b, zero, chunks.batch, {zero, zero, zero, zero},
        [&](Value seq, ValueRange at) -> SmallVector<Value> {
          Value first = at[0], n = chunks.count(b, seq);
          Value next = addIdx(b, first, n);
          Value hit = arith::AndIOp::create(
              b, cmp(b, arith::CmpIPredicate::ule, first, slot),
              cmp(b, arith::CmpIPredicate::ult, slot, next));
          Value lo = arith::MulIOp::create(
              b, arith::SubIOp::create(b, slot, first), chunks.size);
          Value hi = minU(b, addIdx(b, lo, chunks.size), chunks.length(b, seq));
          return {next, select(b, hit, seq, at[1]), select(b, hit, lo, at[2]),
                  select(b, hit, hi, at[3])};
        });
    rewriter.replaceOp(op, ArrayRef(found).drop_front());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The split combine
//===----------------------------------------------------------------------===//

struct LowerCombineSplits : OpRewritePattern<CombineSplitsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CombineSplitsOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType outType = op.getResult().getType();
    auto accType = op.getAcc().getType();
    int64_t rows = accType.getDimSize(4);
    int64_t group = op.getGroup(), d = outType.getDimSize(3);
    Value acc = toBuffer(b, op.getAcc()), mx = toBuffer(b, op.getMax());
    Value sm = toBuffer(b, op.getSum());
    SmallVector<Value> sizes = sizesOf(b, acc);
    Value out = allocFor(b, outType, {sizes[0], Value(), Value(), Value()});
    // The split count may be known only at run time (qattn-tile computes
    // it from the batch).
    Value zero = indexConst(b, 0), points = sizes[3];
    // Balanced chunks: K = B S of them, slot c at point (c / S, c mod S).
    std::optional<Chunks> chunks;
    if (op.getKvLens())
      chunks.emplace(b, toBuffer(b, op.getKvLens()),
                     arith::MulIOp::create(b, sizes[0], points),
                     *op.getTileKeys());
    forEachIndex(b, ValueRange{sizes[0], indexConst(b, outType.getDimSize(1)),
                               indexConst(b, outType.getDimSize(2))},
                 [&](ValueRange ivs) {
      Value bi = ivs[0], h = ivs[1], i = ivs[2];
      Value hk = divIdx(b, h, group);
      Value p = addIdx(b, mulIdx(b, i, group), remIdx(b, h, group));
      Value rt = divIdx(b, p, rows), r = remIdx(b, p, rows);
      Value ns = chunks ? chunks->count(b, bi) : points;
      Value first = chunks ? chunks->first(b, bi) : Value();
      auto row = [&](Value s) {
        if (!chunks)
          return SmallVector<Value>{bi, hk, rt, s, r};
        Value slot = addIdx(b, first, s);
        return SmallVector<Value>{arith::DivUIOp::create(b, slot, points), hk,
                                  rt, arith::RemUIOp::create(b, slot, points),
                                  r};
      };
      Value top = reduceRange1(b, zero, ns, f32Const(b, -INFINITY),
                               [&](Value s, Value x) {
        return arith::MaximumFOp::create(b, x, load(b, mx, row(s)));
      });
      Value ref = finiteRef(b, top);
      auto weight = [&](Value s) {
        return math::ExpOp::create(
            b, arith::SubFOp::create(b, load(b, mx, row(s)), ref));
      };
      Value den = reduceRange1(b, zero, ns, f32Const(b, 0.0), [&](Value s, Value x) {
        return arith::AddFOp::create(
            b, x, arith::MulFOp::create(b, weight(s), load(b, sm, row(s))));
      });
      Value seen = arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, top,
                                         f32Const(b, -INFINITY));
      forRange(b, zero, indexConst(b, d), [&](Value c) {
        Value num = reduceRange1(b, zero, ns, f32Const(b, 0.0), [&](Value s, Value x) {
          SmallVector<Value> idx = row(s);
          idx.push_back(c);
          return arith::AddFOp::create(
              b, x, arith::MulFOp::create(b, weight(s), load(b, acc, idx)));
        });
        Value o = select(b, seen, arith::DivFOp::create(b, num, den),
                         f32Const(b, 0.0));
        store(b, fromF32(b, o, outType.getElementType()), out, {bi, h, i, c});
      });
    });
    rewriter.replaceOp(op, toTensor(b, out, outType));
    return success();
  }
};
} // namespace

void mlir::qattn::populateTileToReferencePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerLoadQueryTile, LowerLoadKVTile, LowerDequantizeTile,
               LowerTileScores, LowerSoftmaxUpdate, LowerTileRowMax,
               LowerWaitTiles, LowerKeyChunk, LowerCombineSplits>(
      patterns.getContext());
}
