//===- TileScores.cpp - qattn.tile_scores as mma.sync and masks -----------===//
//
// Part of the qattn project.
//
// S^T = K Q^T on mma.sync m16n8k16 (f16 operands, f32 accumulation), one
// 8-row block at a time, then each score times the softmax scale, log2 e
// and the K tile's stage-1 scale (base 2: the softmax takes exp2), and -inf
// where the tile op's masks hide it: past `bound`, a row past the group's
// pairs, or after the row's query's causal diagonal.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

void mlir::qattn::tiles::lowerTileScores(WarpProgram &w, TileScoresOp op) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t chunks = w.headDim / 16, group = op.getGroup();
  int64_t queries = op.getQueries(), pairs = group * queries;
  const Regs &q = w.regs(op.getQueriesTile());
  Value k = op.getKeysTile();
  Value first = w.scalar(op.getFirst()), bound = w.scalar(op.getBound());
  Value length = w.scalar(op.getLength());
  // The softmax scale times the stage-1 scale of each half of each key
  // block (the tile's one, but for blocks of 8 keys).
  int64_t blocks = keyBlocks(op.getScores());
  Value softmaxScale = f32Const(b, op.getScale().convertToFloat() * M_LOG2E);
  SmallVector<Value> factors;
  DenseMap<Value, Value> ofScale;
  for (int64_t half = 0; half < 2 * blocks; ++half) {
    Value s1 = tileScale(w, k, blocks, half / 2, half % 2);
    Value &f = ofScale[s1];
    if (!f)
      f = arith::MulFOp::create(b, softmaxScale, s1);
    factors.push_back(f);
  }
  Value rowTile = mul(b, w.scalar(op.getRowTile()), kTileRows);
  Value minusInf = f32Const(b, -INFINITY);
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  };
  Regs scores(blocks * 2 * w.rowBlocks * 2);
  for (int64_t kb = 0; kb < blocks; ++kb) {
    std::array<Value, 2> factor = {factors[2 * kb], factors[2 * kb + 1]};
    for (int64_t nb = 0; nb < w.rowBlocks; ++nb) {
      Value acc = zeros(b, VectorType::get({2, 2}, b.getF32Type()));
      for (int64_t j = 0; j < chunks; ++j)
        acc = nvgpu::MmaSyncOp::create(b, w.reg(k, kb * chunks + j),
                                       q[nb * chunks + j], acc,
                                       ArrayRef<int64_t>{16, 8, 16});
      for (int64_t c = 0; c < 2; ++c) {
        Value row = add(b, rowTile, w.accRow(nb, c));
        Value rowSees = cmp(arith::CmpIPredicate::ult, row, w.idx(pairs));
        // Query i sees keys j with j + queries <= i + length.
        Value lastSeen = add(b, div(b, row, group), length);
        // BPQ queries carry each row's stage-1 scale after their fragments.
        Value rowScale;
        if (q.size() > size_t(w.rowBlocks * chunks))
          rowScale = q[w.rowBlocks * chunks + 2 * nb + c];
        std::array<Value, 2> rowFactor = factor;
        if (rowScale)
          for (int64_t h = 0; h < 2; ++h)
            rowFactor[h] = h && factor[1] == factor[0]
                               ? rowFactor[0]
                               : arith::MulFOp::create(b, factor[h], rowScale);
        for (int64_t h = 0; h < 2; ++h) {
          Value key = add(b, first, add(b, w.g, w.idx(kKeyBlock * kb + 8 * h)));
          Value seen = arith::AndIOp::create(
              b, rowSees, cmp(arith::CmpIPredicate::ult, key, bound));
          if (op.getCausal())
            seen = arith::AndIOp::create(b, seen,
                                         cmp(arith::CmpIPredicate::ule,
                                             add(b, key, w.idx(queries)),
                                             lastSeen));
          Value s = arith::MulFOp::create(
              b, vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{h, c}),
              rowFactor[h]);
          scores[w.scoreAt(kb, 2 * nb + c, h)] =
              arith::SelectOp::create(b, seen, s, minusInf);
        }
      }
    }
  }
  w.tiles[op.getScores()] = scores;
}
