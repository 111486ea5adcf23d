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
// the hundreds of splits a short batch wants. A row no split saw a key of
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

/// A loop over this lane's splits (lane, lane + 32, ... below `splits`)
/// carrying `init`; `body` maps the split and what it carries in to what it
/// carries out.
static SmallVector<Value>
overLaneSplits(ImplicitLocOpBuilder &b, Value splits, Value lane,
               ValueRange init,
               function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop =
      scf::ForOp::create(b, lane, splits, indexConst(b, kThreadsPerWarp), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  scf::YieldOp::create(b,
                       body(loop.getInductionVar(), loop.getRegionIterArgs()));
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
      overLaneSplits(b, splits, lane, minusInf, [&](Value s, ValueRange m) {
        return SmallVector<Value>{
            arith::MaximumFOp::create(b, m[0], rowAt(maxT, s))};
      }).front();
  Value top = overLanes<arith::MaximumFOp>(b, laneMax, {16, 8, 4, 2, 1});
  Value ref = finiteRef(b, top);
  // Carried: the lane's share of the sum, then of the warp's 32 channels.
  auto quad = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> init = {f32Const(b, 0)};
  init.append(kThreadsPerWarp / 4, zeros(b, quad));
  SmallVector<Value> part =
      overLaneSplits(b, splits, lane, init, [&](Value s, ValueRange carried) {
        // An empty split (m_s = -inf) weighs 0.
        Value weight =
            exp2Ftz(b, arith::MulFOp::create(
                           b, arith::SubFOp::create(b, rowAt(maxT, s), ref),
                           f32Const(b, M_LOG2E)));
        SmallVector<Value> next = {arith::AddFOp::create(
            b, carried[0], arith::MulFOp::create(b, weight, rowAt(sumT, s)))};
        Value weights = vector::BroadcastOp::create(b, quad, weight);
        for (int64_t q = 0; q < kThreadsPerWarp / 4; ++q) {
          Value at = acc.linearize(
              b, {bi, hk, rt, s, r, add(b, c0, indexConst(b, 4 * q))});
          Value a =
              vector::LoadOp::create(b, quad, acc.buffer, ValueRange{at},
                                     /*nontemporal=*/false, llvm::Align(16));
          next.push_back(vector::FMAOp::create(b, weights, a, carried[1 + q]));
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
