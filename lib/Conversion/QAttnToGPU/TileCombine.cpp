//===- TileCombine.cpp - qattn.combine_splits as a kernel -----------------===//
//
// Part of the qattn project.
//
// One warp per output row (batch entry, query head, query): every lane
// reads the splits' maxima and sums of the row, weighs each split by
// e^(m_s - M), and merges d/32 of the row's channels. A row no split saw a
// key of (M = -inf) is 0.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

void mlir::qattn::tiles::emitCombineKernel(ImplicitLocOpBuilder &b,
                                           CombineSplitsOp op,
                                           ArrayRef<FlatTensor> args) {
  const FlatTensor &acc = args[0], &maxT = args[1], &sumT = args[2],
                   &out = args[3];
  auto outType = cast<RankedTensorType>(op.getResult().getType());
  auto accType = cast<RankedTensorType>(op.getAcc().getType());
  int64_t heads = outType.getDimSize(1), queries = outType.getDimSize(2);
  int64_t d = outType.getDimSize(3), group = op.getGroup();
  int64_t splits = accType.getDimSize(3), rowsPerTile = accType.getDimSize(4);
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value task = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value bi = div(b, task, heads * queries);
  Value h = rem(b, div(b, task, queries), heads);
  Value i = rem(b, task, queries);
  Value hk = div(b, h, group);
  Value p = add(b, mul(b, i, group), rem(b, h, group));
  Value rt = div(b, p, rowsPerTile), r = rem(b, p, rowsPerTile);
  auto rowAt = [&](const FlatTensor &t, int64_t s) {
    return memref::LoadOp::create(
        b, t.buffer,
        ValueRange{t.linearize(b, {bi, hk, rt, indexConst(b, s), r})});
  };
  Value top = f32Const(b, -INFINITY);
  SmallVector<Value> maxes;
  for (int64_t s = 0; s < splits; ++s) {
    maxes.push_back(rowAt(maxT, s));
    top = arith::MaximumFOp::create(b, top, maxes.back());
  }
  Value ref = finiteRef(b, top);
  SmallVector<Value> weights;
  Value total = f32Const(b, 0);
  for (int64_t s = 0; s < splits; ++s) {
    Value x = arith::MulFOp::create(b, arith::SubFOp::create(b, maxes[s], ref),
                                    f32Const(b, M_LOG2E));
    weights.push_back(exp2Ftz(b, x));
    total = arith::AddFOp::create(
        b, total, arith::MulFOp::create(b, weights[s], rowAt(sumT, s)));
  }
  Value seen = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, top,
                                     f32Const(b, -INFINITY));
  Value inverse = arith::SelectOp::create(
      b, seen, arith::DivFOp::create(b, f32Const(b, 1), total), f32Const(b, 0));
  for (int64_t k = 0; k < d / kThreadsPerWarp; ++k) {
    Value c = add(b, lane, indexConst(b, k * kThreadsPerWarp));
    Value o = f32Const(b, 0);
    for (int64_t s = 0; s < splits; ++s) {
      Value a = memref::LoadOp::create(
          b, acc.buffer,
          ValueRange{acc.linearize(b, {bi, hk, rt, indexConst(b, s), r, c})});
      o = arith::AddFOp::create(b, o, arith::MulFOp::create(b, weights[s], a));
    }
    o = arith::MulFOp::create(b, o, inverse);
    memref::StoreOp::create(b, fromF32(b, o, outType.getElementType()),
                            out.buffer,
                            ValueRange{out.linearize(b, {bi, h, i, c})});
  }
}
