//===- TileCombine.cpp - qattn.combine_splits as a kernel -----------------===//
//
// Part of the qattn project.
//
// One warp per output row (batch entry, query head, query): every lane
// reads the splits' maxima and sums of the row, weighs each split by
// e^(m_s - M), and merges d/32 of the row's channels, in two loops over the
// splits (their count may be known only at run time). A row no split saw a
// key of (M = -inf) is 0.
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

/// A loop over splits [0, `splits`) carrying `init`; `body` maps the split
/// and what it carries in to what it carries out.
static SmallVector<Value>
overSplits(ImplicitLocOpBuilder &b, Value splits, ValueRange init,
           function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop =
      scf::ForOp::create(b, indexConst(b, 0), splits, indexConst(b, 1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  scf::YieldOp::create(b,
                       body(loop.getInductionVar(), loop.getRegionIterArgs()));
  return SmallVector<Value>(loop.getResults());
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
  // The split count: a constant, or the i32 passed beside the partial rows
  // where qattn-tile computed it at run time.
  Value splits = acc.sizes[3];
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value task = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value bi = div(b, task, heads * queries);
  Value h = rem(b, div(b, task, queries), heads);
  Value i = rem(b, task, queries);
  Value hk = div(b, h, group);
  Value p = add(b, mul(b, i, group), rem(b, h, group));
  Value rt = div(b, p, rowsPerTile), r = rem(b, p, rowsPerTile);
  auto rowAt = [&](const FlatTensor &t, Value s) {
    return memref::LoadOp::create(
        b, t.buffer, ValueRange{t.linearize(b, {bi, hk, rt, s, r})});
  };
  Value top =
      overSplits(b, splits, f32Const(b, -INFINITY), [&](Value s, ValueRange m) {
        return SmallVector<Value>{
            arith::MaximumFOp::create(b, m[0], rowAt(maxT, s))};
      }).front();
  Value ref = finiteRef(b, top);
  // Split s weighs e^(m_s - M): the sum's term and the d / 32 channels of
  // the row this lane merges. An empty split (m_s = -inf) weighs 0.
  int64_t perLane = d / kThreadsPerWarp;
  SmallVector<Value> channels;
  for (int64_t k = 0; k < perLane; ++k)
    channels.push_back(add(b, lane, indexConst(b, k * kThreadsPerWarp)));
  SmallVector<Value> init(perLane + 1, f32Const(b, 0));
  SmallVector<Value> merged =
      overSplits(b, splits, init, [&](Value s, ValueRange carried) {
        Value x = arith::MulFOp::create(
            b, arith::SubFOp::create(b, rowAt(maxT, s), ref),
            f32Const(b, M_LOG2E));
        Value weight = exp2Ftz(b, x);
        SmallVector<Value> next = {arith::AddFOp::create(
            b, carried[0], arith::MulFOp::create(b, weight, rowAt(sumT, s)))};
        for (auto [k, c] : llvm::enumerate(channels)) {
          Value a = memref::LoadOp::create(
              b, acc.buffer,
              ValueRange{acc.linearize(b, {bi, hk, rt, s, r, c})});
          next.push_back(arith::AddFOp::create(
              b, carried[k + 1], arith::MulFOp::create(b, weight, a)));
        }
        return next;
      });
  Value seen = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, top,
                                     f32Const(b, -INFINITY));
  Value inverse = arith::SelectOp::create(
      b, seen, arith::DivFOp::create(b, f32Const(b, 1), merged[0]),
      f32Const(b, 0));
  for (auto [k, c] : llvm::enumerate(channels)) {
    Value o = arith::MulFOp::create(b, merged[k + 1], inverse);
    memref::StoreOp::create(b, fromF32(b, o, outType.getElementType()),
                            out.buffer,
                            ValueRange{out.linearize(b, {bi, h, i, c})});
  }
}
