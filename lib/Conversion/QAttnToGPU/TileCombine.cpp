//===- TileCombine.cpp - qattn.combine_splits as a kernel -----------------===//
//
// Part of the qattn project.
//
// One warp per output row (batch entry, query head, query) and 32 of its
// channels (combineWarpsPerRow). The splits, whose count may be known only
// at run time, go to the lanes in turn (split s to lane s mod 32): each lane
// finds the maximum of its splits' maxima, the warp the row's M; each lane
// then weighs its splits by e^(m_s - M) and adds up their sums and their 32
// channels, and the warp adds the lanes' partial rows, halving the channels
// a lane holds at each of five shuffle steps, so that lane l ends with
// channel l. A warp per row walking the splits in turn waited for each
// split's loads (H200, B8 Hq32 d128, 33 splits: 8.7 us) and could not take
// the hundreds of splits a short batch wants. Each lane's loop takes several
// of its splits a step, all their loads first, so that a lane waits once per
// step, not once per split (a short batch gives each lane 4 to 7 splits);
// the kernel asks for one CTA per SM (TileGrid.cpp), or ptxas would keep the
// registers low by issuing the next split's loads after this one's sums.
// H200, B1 Hkv8 N128K d64, whole decode: 56.8 us one split a step, 54.5
// with 4 a step at ptxas' registers, 52.5 with 2 a step and one CTA per SM
// (docs/PERF.md); 4 a step at one CTA per SM (207 registers) gains 1-2% more
// there but loses 1-2.5% at B32 N8K and B8 N2K. A row no split saw a key of
// (M = -inf) is 0.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

/// Splits a lane's loop takes a step in the pass over the maxima and in the
/// pass over the partial rows (32 channels each).
static constexpr int64_t kMaxSplitsPerStep = 8, kRowSplitsPerStep = 2;

/// A loop over this lane's splits (lane, lane + 32, ... below `splits`),
/// `perStep` of them a step, carrying `init`. `body` maps the step's splits
/// (clamped to the last split, so that every load is in bounds), whether each
/// is real, and what the loop carries in to what it carries out; it takes
/// them in order, so the sums are the one-split-a-step loop's.
static SmallVector<Value> overLaneSplits(
    ImplicitLocOpBuilder &b, Value splits, Value lane, int64_t perStep,
    ValueRange init,
    function_ref<SmallVector<Value>(ArrayRef<Value>, ArrayRef<Value>,
                                    ValueRange)>
        body) {
  auto loop = scf::ForOp::create(
      b, lane, splits, indexConst(b, perStep * kThreadsPerWarp), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value last = arith::SubIOp::create(b, splits, indexConst(b, 1));
  SmallVector<Value> at, real;
  for (int64_t u = 0; u < perStep; ++u) {
    Value s = add(b, loop.getInductionVar(),
                  indexConst(b, u * kThreadsPerWarp));
    real.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, s, splits));
    at.push_back(minIdx(b, s, last));
  }
  scf::YieldOp::create(b, body(at, real, loop.getRegionIterArgs()));
  return SmallVector<Value>(loop.getResults());
}

int64_t mlir::qattn::tiles::combineWarpsPerRow(int64_t headDim) {
  return headDim / kThreadsPerWarp;
}

void mlir::qattn::tiles::emitCombineKernel(ImplicitLocOpBuilder &b,
                                           CombineSplitsOp op,
                                           ArrayRef<FlatTensor> args) {
  const FlatTensor &acc = args[0], &maxT = args[1], &sumT = args[2],
                   &out = args[3];
  auto outType = cast<RankedTensorType>(op.getResult().getType());
  auto accType = cast<RankedTensorType>(op.getAcc().getType());
  int64_t heads = outType.getDimSize(1), queries = outType.getDimSize(2);
  int64_t d = outType.getDimSize(3), group = op.getGroup();
  int64_t rowsPerTile = accType.getDimSize(4);
  int64_t chunks = combineWarpsPerRow(d);
  // The split count: a constant, or the i32 passed beside the partial rows
  // where qattn-tile computed it at run time.
  Value splits = acc.sizes[3];
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value task = div(b, warp, chunks);
  Value c0 = mul(b, rem(b, warp, chunks), kThreadsPerWarp);
  Value bi = div(b, task, heads * queries);
  Value h = rem(b, div(b, task, queries), heads);
  Value i = rem(b, task, queries);
  Value hk = div(b, h, group);
  Value p = add(b, mul(b, i, group), rem(b, h, group));
  Value rt = div(b, p, rowsPerTile), r = rem(b, p, rowsPerTile);
  auto rowAt = [&](const FlatTensor &t, Value s) -> Value {
    return memref::LoadOp::create(
        b, t.buffer, ValueRange{t.linearize(b, {bi, hk, rt, s, r})});
  };
  Value minusInf = f32Const(b, -INFINITY);
  Value laneMax =
      overLaneSplits(b, splits, lane, kMaxSplitsPerStep, minusInf,
                     [&](ArrayRef<Value> at, ArrayRef<Value> real,
                         ValueRange m) {
                       SmallVector<Value> maxima;
                       for (Value s : at)
                         maxima.push_back(rowAt(maxT, s));
                       Value top = m[0];
                       for (auto [ms, isReal] : llvm::zip(maxima, real))
                         top = arith::MaximumFOp::create(
                             b, top,
                             arith::SelectOp::create(b, isReal, ms, minusInf));
                       return SmallVector<Value>{top};
                     })
          .front();
  Value top = overLanes<arith::MaximumFOp>(b, laneMax, {16, 8, 4, 2, 1});
  Value ref = finiteRef(b, top);
  // Carried: the lane's share of the sum, then of the warp's 32 channels.
  auto quad = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> init = {f32Const(b, 0)};
  init.append(kThreadsPerWarp / 4, zeros(b, quad));
  SmallVector<Value> part = overLaneSplits(
      b, splits, lane, kRowSplitsPerStep, init,
      [&](ArrayRef<Value> at, ArrayRef<Value> real, ValueRange carried) {
        struct Split {
          Value max, sum;
          SmallVector<Value> quads;
        };
        SmallVector<Split> loaded;
        for (Value s : at) {
          Split &split = loaded.emplace_back();
          split.max = rowAt(maxT, s);
          split.sum = rowAt(sumT, s);
          for (int64_t q = 0; q < kThreadsPerWarp / 4; ++q) {
            Value i = acc.linearize(
                b, {bi, hk, rt, s, r, add(b, c0, indexConst(b, 4 * q))});
            split.quads.push_back(
                vector::LoadOp::create(b, quad, acc.buffer, ValueRange{i},
                                       /*nontemporal=*/false, llvm::Align(16)));
          }
        }
        SmallVector<Value> next(carried);
        for (auto [split, isReal] : llvm::zip(loaded, real)) {
          // An empty split (m_s = -inf) weighs 0, and so does one past the
          // end (a clamped copy of the last).
          Value weight = arith::SelectOp::create(
              b, isReal,
              exp2Ftz(b, arith::MulFOp::create(
                             b, arith::SubFOp::create(b, split.max, ref),
                             f32Const(b, M_LOG2E))),
              f32Const(b, 0));
          next[0] = arith::AddFOp::create(
              b, next[0], arith::MulFOp::create(b, weight, split.sum));
          Value weights = vector::BroadcastOp::create(b, quad, weight);
          for (auto [q, a] : llvm::enumerate(split.quads))
            next[1 + q] = vector::FMAOp::create(b, weights, a, next[1 + q]);
        }
        return next;
      });
  Value total = warpSum(b, part[0]);
  // The lanes' partial channels, reduced and scattered: at each step the
  // lanes whose bit `offset` is set keep the upper half of what they hold
  // and send the lower half to their partner, which keeps its lower half.
  SmallVector<Value> held;
  for (int64_t q = 0; q < kThreadsPerWarp / 4; ++q)
    for (int64_t e = 0; e < 4; ++e)
      held.push_back(
          vector::ExtractOp::create(b, part[1 + q], ArrayRef<int64_t>{e}));
  for (int32_t offset = kThreadsPerWarp / 2; offset > 0; offset /= 2) {
    Value upper = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, lane, indexConst(b, offset)),
        indexConst(b, 0));
    SmallVector<Value> kept;
    for (int32_t c = 0; c < offset; ++c) {
      Value keep = arith::SelectOp::create(b, upper, held[c + offset], held[c]);
      Value send = arith::SelectOp::create(b, upper, held[c], held[c + offset]);
      Value got = gpu::ShuffleOp::create(b, send, offset, kThreadsPerWarp,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
      kept.push_back(arith::AddFOp::create(b, keep, got));
    }
    held = std::move(kept);
  }
  Value seen =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, top, minusInf);
  Value inverse = arith::SelectOp::create(
      b, seen, arith::DivFOp::create(b, f32Const(b, 1), total), f32Const(b, 0));
  Value o = arith::MulFOp::create(b, held.front(), inverse);
  memref::StoreOp::create(
      b, fromF32(b, o, outType.getElementType()), out.buffer,
      ValueRange{out.linearize(b, {bi, h, i, add(b, c0, lane)})});
}
