//===- TileCombine.cpp - qattn.combine_splits as a kernel -----------------===//
//
// Part of the qattn project.
//
// A warp per output row (batch entry, query head, query) and 32 of its
// channels, or several: combineWarpsPerTask, from the split count, which
// may be known only at run time; CTAs of four warps. The splits go to the
// task's lanes in turn (split s to lane s mod 32 of its warp s / 32 mod W).
// Each lane walks its splits once, keeping a running maximum m and
// rescaling what it has added up by e^(m_old - m_new) when a split raises
// it (a pass over the maxima first cost a dependent load of every split
// before the first partial row); it takes two of its splits a step, all
// their loads first, so that it waits once a step, not once a split. The
// warp then weighs its lanes by e^(m_l - M_w) (M_w its maximum) and adds up
// their sums and their 32 channels, halving the channels a lane holds at
// each of five shuffle steps, so that lane l ends with channel l; a task's
// warps meet in shared memory, where the first weighs them by e^(M_w - M)
// and writes the row. Several warps a task are for short batches, whose
// rows have the most splits (B1 Hkv8: 198, 7 a lane for one warp, 2 for
// four: H200, B1 N128K d128 68.3 -> 64.3 us); four warps a task at every
// split count cost the batches of few splits more CTAs than it saved (B8
// N2K 19.6 -> 20.9 us, B32 N8K 110.0 -> 117.4). The kernel asks for one CTA
// per SM (TileGrid.cpp), or ptxas would keep the registers low by issuing
// the next split's loads after this one's sums. A row no split saw a key of
// (M = -inf) is 0. With balanced chunks (qattn.key_chunk) a row's splits
// are its sequence's chunks, which the task's warps find from the lengths
// (TileChunks.cpp): a long sequence's row has many, a short one's few.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

/// Splits a lane's loop takes a step.
static constexpr int64_t kSplitsPerStep = 2;

/// A loop over this lane's splits (first, first + spacing, ... below
/// `splits`), `perStep` of them a step, carrying `init`. `body` maps the
/// step's splits (clamped to the last split, so that every load is in
/// bounds), whether each is real, and what the loop carries in to what it
/// carries out.
static SmallVector<Value>
overLaneSplits(ImplicitLocOpBuilder &b, Value splits, Value end, Value first,
               Value spacing, int64_t perStep, ValueRange init,
               function_ref<SmallVector<Value>(ArrayRef<Value>, ArrayRef<Value>,
                                               ValueRange)>
                   body) {
  Value last = arith::SubIOp::create(b, splits, indexConst(b, 1));
  auto loop = scf::ForOp::create(b, first, end, mul(b, spacing, perStep), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> at, real;
  for (int64_t u = 0; u < perStep; ++u) {
    Value s = add(b, loop.getInductionVar(), mul(b, spacing, u));
    real.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, s, splits));
    at.push_back(minIdx(b, s, last));
  }
  scf::YieldOp::create(b, body(at, real, loop.getRegionIterArgs()));
  return SmallVector<Value>(loop.getResults());
}

/// e^(m - ref) for a maximum `m` (-inf gives 0) and a finite `ref`.
static Value weightOf(ImplicitLocOpBuilder &b, Value m, Value ref) {
  return exp2Ftz(b, arith::MulFOp::create(b, arith::SubFOp::create(b, m, ref),
                                          f32Const(b, M_LOG2E)));
}

int64_t mlir::qattn::tiles::combineChunksPerRow(int64_t headDim) {
  return llvm::divideCeil(headDim, kThreadsPerWarp);
}

Value mlir::qattn::tiles::combineWarpsPerTask(ImplicitLocOpBuilder &b,
                                              Value splits) {
  // c = the warps at which a lane takes one step; 1, 2, else 4 (a divisor
  // of the CTA's warps, so that a task's warps share a CTA): min(c + c / 3,
  // 4), in the ops a manifest size can hold.
  Value c = arith::CeilDivUIOp::create(
      b, splits, indexConst(b, kSplitsPerStep * kThreadsPerWarp));
  return minIdx(b, add(b, c, div(b, c, 3)), indexConst(b, kCombineWarps));
}

void mlir::qattn::tiles::emitCombineKernel(ImplicitLocOpBuilder &b,
                                           CombineSplitsOp op,
                                           ArrayRef<FlatTensor> args,
                                           Value shared) {
  const FlatTensor &acc = args[0], &maxT = args[1], &sumT = args[2],
                   &out = args[3];
  auto outType = cast<RankedTensorType>(op.getResult().getType());
  auto accType = cast<RankedTensorType>(op.getAcc().getType());
  int64_t heads = outType.getDimSize(1), queries = outType.getDimSize(2);
  int64_t d = outType.getDimSize(3), group = op.getGroup();
  int64_t rowsPerTile = accType.getDimSize(4);
  int64_t chunks = combineChunksPerRow(d);
  // The split count: a constant, or the i32 passed beside the partial rows
  // where qattn-tile computed it at run time.
  Value points = acc.sizes[3];
  Value warps = combineWarpsPerTask(b, points);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value lane = rem(b, thread, kThreadsPerWarp);
  Value warp = div(b, thread, kThreadsPerWarp);
  // Warp g of the grid serves task g / W, the W warps of a task one CTA's;
  // the last CTA's warps past the last task load nothing.
  Value g = add(
      b, mul(b, gpu::BlockIdOp::create(b, gpu::Dimension::x), kCombineWarps),
      warp);
  Value tasks = mul(b, out.sizes[0], heads * queries * chunks);
  Value rawTask = arith::DivUIOp::create(b, g, warps);
  Value sub = arith::RemUIOp::create(b, g, warps);
  Value real =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rawTask, tasks);
  Value task0 =
      minIdx(b, rawTask, arith::SubIOp::create(b, tasks, indexConst(b, 1)));
  Value task = div(b, task0, chunks);
  Value c0 = mul(b, rem(b, task0, chunks), kThreadsPerWarp);
  Value bi = div(b, task, heads * queries);
  Value h = rem(b, div(b, task, queries), heads);
  Value i = rem(b, task, queries);
  Value hk = div(b, h, group);
  Value p = add(b, mul(b, i, group), rem(b, h, group));
  Value rt = div(b, p, rowsPerTile), r = rem(b, p, rowsPerTile);
  // The row's splits: the grid points of its sequence, or with balanced
  // chunks the slots of the sequence's chunks (slot c at point (c / S, c mod
  // S) of K = B S chunks).
  Value splits = points, firstSlot;
  if (op.getKvLens()) {
    Value chunks = arith::MulIOp::create(b, acc.sizes[0], points);
    std::tie(firstSlot, splits) =
        sequenceChunks(b, lane, args[4], chunks, *op.getTileKeys(), bi);
  }
  auto pointOf = [&](Value s) -> SmallVector<Value> {
    if (!firstSlot)
      return {bi, hk, rt, s, r};
    Value slot = add(b, firstSlot, s);
    return {arith::DivUIOp::create(b, slot, points), hk, rt,
            arith::RemUIOp::create(b, slot, points), r};
  };
  auto rowAt = [&](const FlatTensor &t, Value s) -> Value {
    return memref::LoadOp::create(b, t.buffer,
                                  ValueRange{t.linearize(b, pointOf(s))});
  };
  Value minusInf = f32Const(b, -INFINITY);
  // Carried: the lane's maximum, its share of the sum, then of the warp's
  // 32 channels, the last two relative to the maximum.
  auto quad = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> init = {minusInf, f32Const(b, 0)};
  init.append(kThreadsPerWarp / 4, zeros(b, quad));
  SmallVector<Value> part = overLaneSplits(
      b, splits, arith::SelectOp::create(b, real, splits, indexConst(b, 0)),
      add(b, lane, mul(b, sub, kThreadsPerWarp)),
      mul(b, warps, kThreadsPerWarp), kSplitsPerStep, init,
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
            // A row's last task is half of one where d is not a multiple of
            // 32 (d = 80): its upper 16 channels read the row's last 4
            // again (in bounds; never stored).
            Value channel = add(b, c0, indexConst(b, 4 * q));
            if (d % kThreadsPerWarp)
              channel = minIdx(b, channel, indexConst(b, d - 4));
            SmallVector<Value> point = pointOf(s);
            point.push_back(channel);
            Value i = acc.linearize(b, point);
            split.quads.push_back(
                vector::LoadOp::create(b, quad, acc.buffer, ValueRange{i},
                                       /*nontemporal=*/false, llvm::Align(16)));
          }
        }
        // A split past the end (a clamped copy of the last) weighs nothing;
        // an empty one (m_s = -inf) weighs e^-inf = 0.
        Value top = carried[0];
        SmallVector<Value> maxima;
        for (auto [split, isReal] : llvm::zip(loaded, real)) {
          maxima.push_back(
              arith::SelectOp::create(b, isReal, split.max, minusInf));
          top = arith::MaximumFOp::create(b, top, maxima.back());
        }
        Value ref = finiteRef(b, top);
        Value rescale = weightOf(b, carried[0], ref);
        SmallVector<Value> next = {
            top, arith::MulFOp::create(b, carried[1], rescale)};
        Value rescales = vector::BroadcastOp::create(b, quad, rescale);
        for (Value q : carried.drop_front(2))
          next.push_back(arith::MulFOp::create(b, q, rescales));
        for (auto [split, m] : llvm::zip(loaded, maxima)) {
          Value weight = weightOf(b, m, ref);
          next[1] = arith::AddFOp::create(
              b, next[1], arith::MulFOp::create(b, weight, split.sum));
          Value weights = vector::BroadcastOp::create(b, quad, weight);
          for (auto [q, a] : llvm::enumerate(split.quads))
            next[2 + q] = vector::FMAOp::create(b, weights, a, next[2 + q]);
        }
        return next;
      });
  // The warp's maximum, and each lane's weight against it.
  Value top = overLanes<arith::MaximumFOp>(b, part[0], {16, 8, 4, 2, 1});
  Value laneWeight = weightOf(b, part[0], finiteRef(b, top));
  Value total = warpSum(b, arith::MulFOp::create(b, part[1], laneWeight));
  // The lanes' partial channels, reduced and scattered: at each step the
  // lanes whose bit `offset` is set keep the upper half of what they hold
  // and send the lower half to their partner, which keeps its lower half.
  SmallVector<Value> held;
  for (int64_t q = 0; q < kThreadsPerWarp / 4; ++q)
    for (int64_t e = 0; e < 4; ++e)
      held.push_back(arith::MulFOp::create(
          b, vector::ExtractOp::create(b, part[2 + q], ArrayRef<int64_t>{e}),
          laneWeight));
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
  Value channel = held.front();
  // The warps meet in shared memory: warp w's 32 channels, then its maximum
  // and sum, at w * 34; the first of a task weighs its task's.
  int64_t stride = kThreadsPerWarp + 2;
  Value base = mul(b, warp, stride);
  memref::StoreOp::create(b, channel, shared, ValueRange{add(b, base, lane)});
  memref::StoreOp::create(
      b, top, shared, ValueRange{add(b, base, indexConst(b, kThreadsPerWarp))});
  memref::StoreOp::create(
      b, total, shared,
      ValueRange{add(b, base, indexConst(b, kThreadsPerWarp + 1))});
  gpu::BarrierOp::create(b);
  Value first =
      arith::AndIOp::create(b, real,
                            arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                  sub, indexConst(b, 0)));
  auto ifFirst = scf::IfOp::create(b, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
  // Warp `warp + w` of the task, for w < W (clamped into the CTA past it).
  SmallVector<Value> bases, inTask;
  for (int64_t w = 0; w < kCombineWarps; ++w) {
    bases.push_back(mul(b,
                        minIdx(b, add(b, warp, indexConst(b, w)),
                               indexConst(b, kCombineWarps - 1)),
                        stride));
    inTask.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                           indexConst(b, w), warps));
  }
  auto sharedAt = [&](int64_t w, Value offset) {
    return memref::LoadOp::create(b, shared,
                                  ValueRange{add(b, bases[w], offset)});
  };
  SmallVector<Value> tops;
  Value rowTop = minusInf;
  for (int64_t w = 0; w < kCombineWarps; ++w) {
    tops.push_back(arith::SelectOp::create(
        b, inTask[w], sharedAt(w, indexConst(b, kThreadsPerWarp)), minusInf));
    rowTop = arith::MaximumFOp::create(b, rowTop, tops.back());
  }
  Value ref = finiteRef(b, rowTop);
  Value rowTotal = f32Const(b, 0), rowChannel = f32Const(b, 0);
  for (int64_t w = 0; w < kCombineWarps; ++w) {
    Value weight = weightOf(b, tops[w], ref);
    rowTotal = math::FmaOp::create(
        b, weight, sharedAt(w, indexConst(b, kThreadsPerWarp + 1)), rowTotal);
    rowChannel = math::FmaOp::create(b, weight, sharedAt(w, lane), rowChannel);
  }
  Value seen =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, rowTop, minusInf);
  Value inverse = arith::SelectOp::create(
      b, seen, arith::DivFOp::create(b, f32Const(b, 1), rowTotal),
      f32Const(b, 0));
  auto store = [&] {
    memref::StoreOp::create(
        b,
        fromF32(b, arith::MulFOp::create(b, rowChannel, inverse),
                outType.getElementType()),
        out.buffer, ValueRange{out.linearize(b, {bi, h, i, add(b, c0, lane)})});
  };
  if (d % kThreadsPerWarp == 0)
    return store();
  // The upper half of a row's last task lies past the row (d = 80).
  ifThen(b,
         arith::CmpIOp::create(b, arith::CmpIPredicate::ult, add(b, c0, lane),
                               indexConst(b, d)),
         store);
}
