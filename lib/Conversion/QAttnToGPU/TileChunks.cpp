//===- TileChunks.cpp - balanced key chunks on a warp ---------------------===//
//
// Part of the qattn project.
//
// qattn.key_chunk (and the combine's view of the same chunks) computed by
// the 32 lanes of a warp: the lengths live in device memory and the grid is
// sized from the batch alone, so every warp finds its chunk itself. The
// lanes read the lengths 32 at a time (a round; one for batches of up to
// 32); warp sums (redux.sync) give the chunk size, an inclusive scan
// (shuffles up) each sequence's first slot, and a ballot the one sequence
// whose slots hold the warp's. Every lane ends with the same values, in
// uniform registers.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

namespace {
Value toIndex(ImplicitLocOpBuilder &b, Value v) {
  return arith::IndexCastUIOp::create(b, b.getIndexType(), v);
}
Value toI32(ImplicitLocOpBuilder &b, Value v) {
  return arith::IndexCastUIOp::create(b, b.getI32Type(), v);
}
Value ult(ImplicitLocOpBuilder &b, Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
}
/// redux.sync `kind` of the i32 `v` over the warp: one instruction, whose
/// result ptxas keeps in a uniform register, as it does values from the
/// block index, so that the addresses made from it stay uniform too.
Value redux(ImplicitLocOpBuilder &b, Value v, NVVM::ReduxKind kind) {
  return NVVM::ReduxOp::create(b, b.getI32Type(), v, kind, i32Const(b, -1));
}
/// The index `v`, the same on every lane, as ptxas can see it is.
Value uniform(ImplicitLocOpBuilder &b, Value v) {
  return toIndex(b, redux(b, toI32(b, v), NVVM::ReduxKind::UMIN));
}

/// The lengths as the warp reads them: lane l's of round `base` is
/// kv_lens[base + l] (i32), 0 past the batch.
struct WarpLengths {
  ImplicitLocOpBuilder &b;
  const FlatTensor &lens;
  Value lane;

  Value batch() const { return lens.sizes[0]; }
  Value at(Value base) const {
    Value i = add(b, base, lane);
    Value in = ult(b, i, batch());
    Value last = arith::SubIOp::create(b, batch(), indexConst(b, 1));
    Value v =
        memref::LoadOp::create(b, lens.buffer, ValueRange{minIdx(b, i, last)});
    return arith::SelectOp::create(b, in, v, i32Const(b, 0));
  }
  /// Carries `init` over the rounds (base 0, 32, ... below the batch).
  SmallVector<Value>
  overRounds(ValueRange init,
             function_ref<SmallVector<Value>(Value, ValueRange)> body) const {
    auto loop = scf::ForOp::create(b, indexConst(b, 0), batch(),
                                   indexConst(b, kThreadsPerWarp), init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, body(loop.getInductionVar(), loop.getRegionIterArgs()));
    return SmallVector<Value>(loop.getResults());
  }
  /// The sum over the warp's lanes of `laneValue(base)` over all rounds.
  Value sum(function_ref<Value(Value)> laneValue) const {
    return overRounds(i32Const(b, 0),
                      [&](Value base, ValueRange total) {
                        return SmallVector<Value>{arith::AddIOp::create(
                            b, total[0],
                            redux(b, laneValue(base), NVVM::ReduxKind::ADD))};
                      })
        .front();
  }
  /// The chunk size for `chunks` chunks of `tileKeys`-key tiles (index).
  Value chunkSize(Value chunks, int64_t tileKeys) const {
    Value total = sum([&](Value base) { return at(base); });
    return balancedChunkKeys(
        b, toIndex(b, total), batch(), chunks, tileKeys, [&](Value size) {
          Value size32 = toI32(b, size);
          return toIndex(b, sum([&](Value base) {
                           return arith::CeilDivUIOp::create(b, at(base),
                                                             size32);
                         }));
        });
  }
};
} // namespace

/// Lane `lane`'s inclusive prefix sum of `v` (i32) over lanes 0 .. lane.
static Value inclusiveScan(ImplicitLocOpBuilder &b, Value v, Value lane) {
  for (int32_t offset = 1; offset < kThreadsPerWarp; offset *= 2) {
    Value got = gpu::ShuffleOp::create(b, v, offset, kThreadsPerWarp,
                                       gpu::ShuffleMode::UP)
                    .getShuffleResult();
    Value from = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, lane,
                                       indexConst(b, offset));
    v = arith::AddIOp::create(
        b, v, arith::SelectOp::create(b, from, got, i32Const(b, 0)));
  }
  return v;
}

void mlir::qattn::tiles::lowerKeyChunk(WarpProgram &w, KeyChunkOp op) {
  ImplicitLocOpBuilder &b = w.b;
  // (The grid kernel's CTA is one warp: its thread is its lane.)
  Value lane = w.lane;
  WarpLengths lens{b, w.tensor(op.getKvLens()), lane};
  Value size = lens.chunkSize(w.scalar(op.getChunks()), op.getTileKeys());
  Value slot = w.scalar(op.getSlot());
  Value size32 = toI32(b, size), slot32 = toI32(b, slot);
  Value zero = indexConst(b, 0);
  // Carried: the rounds' slots so far (i32), then seq, lo, hi (index).
  SmallVector<Value> found = lens.overRounds(
      {i32Const(b, 0), zero, zero, zero},
      [&](Value base, ValueRange at) -> SmallVector<Value> {
        Value length = lens.at(base);
        Value count = arith::CeilDivUIOp::create(b, length, size32);
        Value end =
            arith::AddIOp::create(b, at[0], inclusiveScan(b, count, lane));
        Value first = arith::SubIOp::create(b, end, count);
        Value hit = arith::AndIOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ule, first, slot32),
            ult(b, slot32, end));
        // The one lane whose slots hold the warp's, if any this round.
        Value all = i32Const(b, -1);
        Value mask = NVVM::VoteSyncOp::create(b, b.getI32Type(), all, hit,
                                              NVVM::VoteSyncKind::ballot);
        Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, mask,
                                          i32Const(b, 0));
        // (32 where no lane hit: a shuffle from past the warp, not used.)
        Value src = LLVM::CountTrailingZerosOp::create(
            b, mask, /*is_zero_poison=*/false);
        auto fromHit = [&](Value v) {
          return gpu::ShuffleOp::create(b, v, src, i32Const(b, kThreadsPerWarp),
                                        gpu::ShuffleMode::IDX)
              .getShuffleResult();
        };
        Value lo = arith::MulIOp::create(
            b, toIndex(b, arith::SubIOp::create(b, slot32, fromHit(first))),
            size);
        Value hi = minIdx(b, add(b, lo, size), toIndex(b, fromHit(length)));
        Value roundEnd = arith::AddIOp::create(
            b, at[0], redux(b, count, NVVM::ReduxKind::ADD));
        return {roundEnd,
                arith::SelectOp::create(b, any, add(b, base, toIndex(b, src)),
                                        at[1]),
                arith::SelectOp::create(b, any, lo, at[2]),
                arith::SelectOp::create(b, any, hi, at[3])};
      });
  w.scalars.map(op.getSeq(), uniform(b, found[1]));
  w.scalars.map(op.getLo(), uniform(b, found[2]));
  w.scalars.map(op.getHi(), uniform(b, found[3]));
}

std::pair<Value, Value>
mlir::qattn::tiles::sequenceChunks(ImplicitLocOpBuilder &b, Value lane,
                                   const FlatTensor &kvLens, Value chunks,
                                   int64_t tileKeys, Value seq) {
  WarpLengths lens{b, kvLens, lane};
  Value size32 = toI32(b, lens.chunkSize(chunks, tileKeys));
  // The chunks of the sequences before `seq`, then its own.
  Value first = lens.sum([&](Value base) {
    Value count = arith::CeilDivUIOp::create(b, lens.at(base), size32);
    return arith::SelectOp::create(b, ult(b, add(b, base, lane), seq), count,
                                   i32Const(b, 0));
  });
  Value own = memref::LoadOp::create(b, kvLens.buffer, ValueRange{seq});
  return {toIndex(b, first),
          toIndex(b, arith::CeilDivUIOp::create(b, own, size32))};
}
