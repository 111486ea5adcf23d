//===- TileSoftmax.cpp - the online softmax, P.V and the partial rows -----===//
//
// Part of the qattn project.
//
// qattn.softmax_update on a lane's rows: the tile's row max over the 8
// lanes of a column (shuffles), the correction of the sums and accumulators,
// the terms 2^(s - max), and O^T += V^T P^T on mma.sync, P^T made from the
// S^T accumulators by a movmatrix transpose, times the V tile's stage-1
// scale. With lazy_max a vote decides whether any score passed its row's
// reference by the bar; only then do the shuffles and the rescale run (a
// warp-uniform branch). Sums stay per lane (over its own keys) until the
// store adds the column's 8. The stores of the grid's terminator write each
// lane's rows of the split's max (back in natural units), sum and
// accumulators.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

/// max(m, the scores of accumulator row r over the tile's `blocks` key
/// blocks): this lane's keys, then the 8 lanes of its column.
static Value rowMax(WarpProgram &w, const Regs &s, int64_t blocks, int64_t r,
                    Value m) {
  ImplicitLocOpBuilder &b = w.b;
  Value tileMax = s[w.scoreAt(0, r, 0)];
  for (int64_t kb = 0; kb < blocks; ++kb)
    for (int64_t h = 0; h < 2; ++h)
      tileMax = arith::MaximumFOp::create(b, tileMax, s[w.scoreAt(kb, r, h)]);
  return arith::MaximumFOp::create(b, m,
                                   overColumn<arith::MaximumFOp>(b, tileMax));
}

void mlir::qattn::tiles::lowerTileRowMax(WarpProgram &w, TileRowMaxOp op) {
  int64_t blocks = keyBlocks(op.getScores());
  const Regs &s = w.regs(op.getScores());
  Regs max = w.regs(op.getMax()), out;
  for (int64_t r = 0; r < 2 * w.rowBlocks; ++r)
    out.push_back(rowMax(w, s, blocks, r, max[r]));
  w.tiles[op.getNewMax()] = out;
}

/// 2^(old - new) for a row's max moving from `old` to `moved`; a row that
/// has seen no key keeps -inf and subtracts 0 (no inf - inf).
static Value correction(ImplicitLocOpBuilder &b, Value old, Value moved) {
  return exp2Ftz(b, arith::SubFOp::create(b, old, finiteRef(b, moved)));
}

/// The accumulators times their rows' corrections.
static void rescale(WarpProgram &w, ArrayRef<Value> corr, Regs &acc) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t chunks = w.headDim / 16;
  auto cType = VectorType::get({2, 2}, b.getF32Type());
  for (int64_t nb = 0; nb < w.rowBlocks; ++nb) {
    Value c = vector::FromElementsOp::create(
        b, cType,
        ValueRange{corr[2 * nb], corr[2 * nb + 1], corr[2 * nb],
                   corr[2 * nb + 1]});
    for (int64_t i = 0; i < chunks; ++i)
      acc[nb * chunks + i] = arith::MulFOp::create(b, acc[nb * chunks + i], c);
  }
}

/// lazy_max: the rows' references move only when some score of the warp
/// passes its row's by more than `bar` (base 2), a warp-uniform branch that
/// most tiles skip; inside it, each row whose tile max passed moves to it.
static void moveLazyMax(WarpProgram &w, const Regs &s, int64_t blocks,
                        double bar, Regs &max, Regs &sum, Regs &acc) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t rows = 2 * w.rowBlocks;
  Regs bars;
  Value passed;
  for (int64_t r = 0; r < rows; ++r) {
    bars.push_back(arith::AddFOp::create(b, max[r], f32Const(b, bar)));
    for (int64_t kb = 0; kb < blocks; ++kb)
      for (int64_t h = 0; h < 2; ++h) {
        Value p = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                        s[w.scoreAt(kb, r, h)], bars[r]);
        passed = passed ? arith::OrIOp::create(b, passed, p).getResult() : p;
      }
  }
  SmallVector<Value> state(max);
  llvm::append_range(state, sum);
  llvm::append_range(state, acc);
  SmallVector<Value> out = ifAnyLane(b, passed, state, [&] {
    SmallVector<Value> next, corr;
    for (int64_t r = 0; r < rows; ++r) {
      Value t = rowMax(w, s, blocks, r, max[r]);
      Value pass =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, t, bars[r]);
      next.push_back(arith::SelectOp::create(b, pass, t, max[r]));
      corr.push_back(correction(b, max[r], next[r]));
    }
    for (int64_t r = 0; r < rows; ++r)
      next.push_back(arith::MulFOp::create(b, sum[r], corr[r]));
    Regs a(acc);
    rescale(w, corr, a);
    llvm::append_range(next, a);
    return next;
  });
  ArrayRef<Value> all(out);
  max.assign(all.begin(), all.begin() + rows);
  sum.assign(all.begin() + rows, all.begin() + 2 * rows);
  acc.assign(all.begin() + 2 * rows, all.end());
}

void mlir::qattn::tiles::lowerSoftmaxUpdate(WarpProgram &w,
                                            SoftmaxUpdateOp op) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t chunks = w.headDim / 16, rows = 2 * w.rowBlocks;
  int64_t blocks = keyBlocks(op.getScores());
  const Regs &s = w.regs(op.getScores());
  Value v = op.getValues();
  Regs max = w.regs(op.getMax()), sum = w.regs(op.getSum());
  Regs acc = w.regs(op.getAcc());
  // The terms sit where their scores do.
  auto at = [&](int64_t kb, int64_t r, int64_t h) {
    return w.scoreAt(kb, r, h);
  };
  // With fixed_max the max is the row's final one (a first pass found it):
  // no correction, and the terms are those of `softmax` (SAS is defined on
  // natural-log scores: the base-2 difference times ln 2). The scores are
  // base 2, so lazy_max's bar is too.
  bool fixed = op.getFixedMax();
  SoftmaxAttr softmax = op.getSoftmaxAttr();
  auto termOf = [&](Value x) -> Value {
    if (!fixed || !softmax || softmax.getMode() == SoftmaxMode::exact)
      return exp2Ftz(b, x);
    return softmaxTerm(b, arith::MulFOp::create(b, x, f32Const(b, M_LN2)),
                       softmax);
  };
  std::optional<APFloat> lazy = op.getLazyMax();
  if (lazy)
    moveLazyMax(w, s, blocks, lazy->convertToDouble() / M_LN2, max, sum, acc);
  // Otherwise (unless fixed) every row moves to its running max.
  bool eager = !fixed && !lazy;
  Regs p(s.size()), corr;
  for (int64_t r = 0; r < rows; ++r) {
    if (eager) {
      Value m = rowMax(w, s, blocks, r, max[r]);
      corr.push_back(correction(b, max[r], m));
      max[r] = m;
      sum[r] = arith::MulFOp::create(b, sum[r], corr[r]);
    }
    Value ref = finiteRef(b, max[r]);
    for (int64_t kb = 0; kb < blocks; ++kb)
      for (int64_t h = 0; h < 2; ++h) {
        Value &term = p[at(kb, r, h)];
        term = termOf(arith::SubFOp::create(b, s[at(kb, r, h)], ref));
        sum[r] = arith::AddFOp::create(b, sum[r], term);
      }
  }
  if (eager)
    rescale(w, corr, acc);
  // P^T as B fragments: the accumulators hold (key g (+8), rows 2t, 2t+1);
  // the operand wants (keys 2t, 2t+1 (+8), row g).
  // V's stage-1 scale of keys g + 8h (h = 0, 1) scales their terms.
  for (int64_t kb = 0; kb < blocks; ++kb)
    for (int64_t nb = 0; nb < w.rowBlocks; ++nb) {
      SmallVector<Value> regs;
      for (int64_t h = 0; h < 2; ++h) {
        Value vScale = tileScale(w, v, blocks, kb, h);
        SmallVector<Value> both;
        for (int64_t c = 0; c < 2; ++c)
          both.push_back(fromF32(
              b, arith::MulFOp::create(b, p[at(kb, 2 * nb + c, h)], vScale),
              b.getF16Type()));
        regs.push_back(transpose8x8(
            b, vector::FromElementsOp::create(
                   b, VectorType::get({2}, b.getF16Type()), both)));
      }
      Value pT = fragment(b, regs);
      for (int64_t i = 0; i < chunks; ++i)
        acc[nb * chunks + i] = nvgpu::MmaSyncOp::create(
            b, w.reg(v, kb * chunks + i), pT, acc[nb * chunks + i],
            ArrayRef<int64_t>{16, 8, 16});
    }
  w.tiles[op.getNewMax()] = max;
  w.tiles[op.getNewSum()] = sum;
  w.tiles[op.getNewAcc()] = acc;
  w.sums.insert(op.getNewSum());
}

Regs mlir::qattn::tiles::splatState(WarpProgram &w, RankedTensorType type,
                                    double value) {
  ImplicitLocOpBuilder &b = w.b;
  if (type.getRank() == 1)
    return Regs(2 * w.rowBlocks, f32Const(b, value));
  auto cType = VectorType::get({2, 2}, b.getF32Type());
  Value splat = arith::ConstantOp::create(
      b, DenseElementsAttr::get(cType, b.getF32FloatAttr(value)));
  return Regs(w.rowBlocks * (w.headDim / 16), splat);
}

void mlir::qattn::tiles::storeRows(WarpProgram &w,
                                   tensor::ParallelInsertSliceOp insert) {
  ImplicitLocOpBuilder &b = w.b;
  const FlatTensor &dest = w.tensor(insert.getDest());
  const Regs &regs = w.regs(insert.getSource());
  SmallVector<Value> offsets;
  for (OpFoldResult o : insert.getMixedOffsets()) {
    if (auto v = dyn_cast<Value>(o))
      offsets.push_back(w.scalar(v));
    else
      offsets.push_back(w.idx(*getConstantIntValue(o)));
  }
  auto at = [&](ArrayRef<Value> inner) {
    SmallVector<Value> idx(offsets);
    for (auto [i, x] : llvm::enumerate(inner)) {
      Value &o = idx[idx.size() - inner.size() + i];
      o = add(b, o, x);
    }
    return dest.linearize(b, idx);
  };
  auto store = [&](Value value, Value index) {
    memref::StoreOp::create(b, value, dest.buffer, ValueRange{index});
  };
  // Rows past the grid's (query, head) pairs pad the mma's n side: a lane
  // stores only real ones (at Hq/Hkv = 4 and one query, half its rows).
  // Every row tile holds at least rows mod 16 real rows: a block below that
  // needs no test.
  Value rowTile = offsets[2];
  auto ifReal = [&](int64_t nb, int64_t c, function_ref<void()> then) {
    int64_t least = w.rows % kTileRows;
    if (least == 0 || 8 * (nb + 1) <= least)
      return then();
    Value row = add(b, mul(b, rowTile, kTileRows), w.accRow(nb, c));
    ifThen(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, w.idx(w.rows)),
        then);
  };
  if (cast<RankedTensorType>(insert.getSource().getType()).getRank() == 2) {
    // Lane g holds channels [g d/8, (g + 1) d/8) of its rows 2t + c, in
    // LaneChannels order: gathered back into channel order, each row is
    // d/32 stores of 4 (16 bytes) instead of d/8 scalar ones, and one of 2
    // where d/8 is not a multiple of 4 (d = 80, where lane g's channels
    // start 40 g bytes into the row: 8-byte aligned, so stores of 2).
    int64_t chunks = w.headDim / 16, span = w.headDim / 8;
    SmallVector<std::pair<int64_t, int64_t>> unitOf(span, {-1, -1});
    for (int64_t i = 0; i < chunks; ++i)
      for (int64_t h = 0; h < 2; ++h)
        unitOf[w.channels.valueChannels[2 * i + h]] = {i, h};
    assert(llvm::all_of(unitOf, [](auto u) { return u.first >= 0; }) &&
           "a lane's V channels are a permutation of its span");
    Value laneBase = mul(b, w.g, span);
    for (int64_t nb = 0; nb < w.rowBlocks; ++nb)
      for (int64_t c = 0; c < 2; ++c)
        ifReal(nb, c, [&] {
          for (int64_t q = 0; q < span; q += 4) {
            int64_t n = std::min<int64_t>(4, span - q);
            SmallVector<Value> elements;
            for (int64_t e = 0; e < n; ++e) {
              auto [i, h] = unitOf[q + e];
              elements.push_back(vector::ExtractOp::create(
                  b, regs[nb * chunks + i], ArrayRef<int64_t>{h, c}));
            }
            Value index = at({w.accRow(nb, c), add(b, laneBase, w.idx(q))});
            vector::StoreOp::create(
                b,
                vector::FromElementsOp::create(
                    b, VectorType::get({n}, b.getF32Type()), elements),
                dest.buffer, ValueRange{index}, /*nontemporal=*/false,
                llvm::commonAlignment(llvm::Align(4 * n), 4 * span));
          }
        });
    return;
  }
  bool sum = w.sums.contains(insert.getSource());
  SmallVector<Value> values;
  for (Value x : regs)
    values.push_back(sum ? overColumn<arith::AddFOp>(b, x)
                         // The max goes back to natural units.
                         : arith::MulFOp::create(b, x, f32Const(b, M_LN2)));
  // The 8 lanes of a column hold the same rows: lane g = 0 stores them.
  Value first =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, w.g, w.idx(0));
  ifThen(b, first, [&] {
    for (int64_t nb = 0; nb < w.rowBlocks; ++nb)
      for (int64_t c = 0; c < 2; ++c)
        ifReal(nb, c,
               [&] { store(values[2 * nb + c], at({w.accRow(nb, c)})); });
  });
}
