//===- MmaKernel.cpp - tensor-core attention for BPQ int8 queries ---------===//
//
// Part of the qattn project.
//
// Flash attention on mma.sync: a CTA of 4 warps owns 64 query rows of one
// query head (16 per warp) and walks the keys in tiles of 64. Per tile the
// CTA dequantizes K to int8 and V to f16 into shared memory once (stage 2 in
// integers, V times its stage-1 scale); each warp then computes its 16x64
// scores as int8 x int8 -> int32 m16n8k32 products scaled by the query's and
// key's stage-1 scales, runs the online softmax on the accumulator fragments,
// and multiplies P (f16, reusing the score fragments' layout as the A
// operand) with V by m16n8k16. Fragment layouts follow the PTX ISA's
// mma.m16n8k32 (.s8) and mma.m16n8k16 (.f16) register maps.
//
//===----------------------------------------------------------------------===//

#include "KernelCommon.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;

// 4 warps x 16 rows: one m16 tile per warp; 64-key tiles: 8 n8 score tiles,
// 4 k16 steps of P.V. Shared memory at d = 128: 8 KiB K + 16 KiB V.
static constexpr int64_t kMmaWarps = 4;
static constexpr int64_t kRowsPerWarp = 16;
static constexpr int64_t kTileKeys = 64;
static constexpr int64_t kRowsPerCta = kMmaWarps * kRowsPerWarp;

int64_t mlir::qattn::kernels::mmaThreads(const AttentionShape &) {
  return kMmaWarps * kThreadsPerWarp;
}

std::pair<int64_t, int64_t>
mlir::qattn::kernels::mmaGrid(const AttentionShape &shape) {
  return {llvm::divideCeilSigned(shape.queries, kRowsPerCta),
          shape.batch * shape.qHeads};
}

/// A constant vector of zeros.
static Value zeros(ImplicitLocOpBuilder &b, VectorType type) {
  return arith::ConstantOp::create(b, cast<TypedAttr>(b.getZeroAttr(type)));
}

namespace {
/// Builds one CTA's body. Lane l of a warp: group g = l / 4 (rows g, g + 8
/// of the warp's tile), thread-in-group t = l % 4 (columns).
class MmaEmitter {
public:
  MmaEmitter(ImplicitLocOpBuilder &b, const AttentionShape &shape,
             const AttentionView &view, Type outType)
      : b(b), shape(shape), view(view), outType(outType) {}

  void emit(Value out, gpu::GPUFuncOp kernel) {
    MLIRContext *ctx = b.getContext();
    auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    int64_t d = shape.headDim;
    kTile = kernel.addWorkgroupAttribution(
        MemRefType::get({kTileKeys, d}, b.getI8Type(), nullptr, wg), b.getLoc());
    // V transposed, so a B fragment's two keys are adjacent.
    vTile = kernel.addWorkgroupAttribution(
        MemRefType::get({d, kTileKeys}, b.getF16Type(), nullptr, wg), b.getLoc());
    kScales = kernel.addWorkgroupAttribution(
        MemRefType::get({kTileKeys}, b.getF32Type(), nullptr, wg), b.getLoc());
    alignWorkgroupBuffers(kernel);

    tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value lane = rem(b, tid, kThreadsPerWarp);
    group = div(b, lane, 4);
    inGroup = rem(b, lane, 4);
    Value warp = div(b, tid, kThreadsPerWarp);
    Value bh = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    h = rem(b, bh, shape.qHeads);
    bi = div(b, bh, shape.qHeads);
    hk = div(b, h, shape.groupSize());
    Value ctaRow = mul(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                       kRowsPerCta);
    Value row0 = add(b, add(b, ctaRow, mul(b, warp, kRowsPerWarp)), group);
    rows = {row0, add(b, row0, indexConst(b, 8))};
    // Rows past the end compute on the last query and are never stored.
    for (Value r : rows)
      clampedRows.push_back(minIdx(b, r, indexConst(b, shape.queries - 1)));

    loadQueries();
    // The CTA's last row bounds the keys any of its rows can see.
    Value lastRow = minIdx(b, add(b, ctaRow, indexConst(b, kRowsPerCta - 1)),
                           indexConst(b, shape.queries - 1));
    Value keyEnd = indexConst(b, shape.cacheKeys);
    if (shape.causal)
      keyEnd = minIdx(b, keyEnd,
                      add(b, lastRow, indexConst(b, shape.cacheKeys -
                                                        shape.queries + 1)));
    Value tiles = div(b, add(b, keyEnd, indexConst(b, kTileKeys - 1)), kTileKeys);

    SmallVector<Value> init = {f32Const(b, -INFINITY), f32Const(b, -INFINITY),
                               f32Const(b, 0.0), f32Const(b, 0.0)};
    Value zeroAcc = zeros(b, VectorType::get({2, 2}, b.getF32Type()));
    for (int64_t u = 0; u < d / 8; ++u)
      init.push_back(zeroAcc);
    SmallVector<Value> st = reduceRange(
        b, indexConst(b, 0), tiles, init, [&](Value t, ValueRange state) {
          return processTile(mul(b, t, kTileKeys), state);
        });
    storeOutput(out, st);
  }

private:
  /// A fragments of the int8 queries, one per 32 channels, and the per-row
  /// factor scale * s1_q that turns int32 scores into f32 ones.
  void loadQueries() {
    auto frag = VectorType::get({4, 4}, b.getI8Type());
    auto quad = VectorType::get({4}, b.getI8Type());
    for (int64_t ks = 0; ks < shape.headDim / 32; ++ks) {
      Value a = zeros(b, frag);
      for (int64_t reg = 0; reg < 4; ++reg) {
        Value row = clampedRows[reg % 2];
        Value col = add(b, mul(b, inGroup, 4),
                        indexConst(b, ks * 32 + (reg >= 2 ? 16 : 0)));
        Value v = vector::LoadOp::create(b, quad, view.q, ValueRange{bi, h, row, col});
        a = vector::InsertOp::create(b, v, a, ArrayRef<int64_t>{reg});
      }
      qFrags.push_back(a);
    }
    Value scale = f32Const(b, shape.scale);
    for (Value row : clampedRows) {
      Value s1 = stage1ScaleAt(b, view.qScales, view.qStage1, bi, h, row, Value());
      rowScale.push_back(arith::MulFOp::create(b, s1, scale));
    }
  }

  /// The CTA dequantizes keys [first, first + 64) into shared memory.
  void stageTile(Value first) {
    int64_t d = shape.headDim;
    int64_t perThread = kTileKeys * d / mmaThreads(shape);
    auto [kBits, kOffset] =
        headCodes(b, view.k.stage2, hk, d, std::nullopt);
    auto [vBits, vOffset] =
        headCodes(b, view.v.stage2, hk, d, std::nullopt);
    Value lastKey = indexConst(b, shape.cacheKeys - 1);
    for (int64_t e = 0; e < perThread; ++e) {
      Value idx = add(b, tid, indexConst(b, e * mmaThreads(shape)));
      Value key = div(b, idx, d), c = rem(b, idx, d);
      Value j = add(b, first, key);
      Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j,
                                          indexConst(b, shape.cacheKeys));
      Value jc = minIdx(b, j, lastKey);
      Value k8 = dequantizeToInt8(b, view.k, bi, hk, jc, c, kBits, kOffset);
      k8 = arith::SelectOp::create(b, valid, k8, i32Const(b, 0));
      store(b, arith::TruncIOp::create(b, b.getI8Type(), k8), kTile, {key, c});
      Value v = dequantizeCached(b, view.v, bi, hk, jc, c, vBits, vOffset);
      v = arith::SelectOp::create(b, valid, v, f32Const(b, 0.0));
      store(b, fromF32(b, v, b.getF16Type()), vTile, {c, key});
    }
    // One key scale per key of the tile (block granularity only).
    Value isScaleThread = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tid,
                                                indexConst(b, kTileKeys));
    auto ifOp = scf::IfOp::create(b, isScaleThread, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    Value jc = minIdx(b, add(b, first, tid), lastKey);
    store(b, stage1ScaleAt(b, view.k.scales, view.k.stage1, bi, hk, jc, Value()),
          kScales, {tid});
  }

  /// Scores of the warp's 16 rows against the tile's 64 keys: 8 n8 tiles of
  /// (row g / g+8) x (keys 8n + 2t, 8n + 2t + 1), masked, in f32.
  SmallVector<SmallVector<Value>> scores(Value first) {
    auto bFrag = VectorType::get({2, 4}, b.getI8Type());
    auto quad = VectorType::get({4}, b.getI8Type());
    auto cType = VectorType::get({2, 2}, b.getI32Type());
    Value zeroC = zeros(b, cType);
    SmallVector<SmallVector<Value>> s; // [n tile][reg: row g c0, c1, row g+8 c0, c1]
    for (int64_t nt = 0; nt < kTileKeys / 8; ++nt) {
      Value acc = zeroC;
      Value key = add(b, group, indexConst(b, nt * 8));
      for (int64_t ks = 0; ks < shape.headDim / 32; ++ks) {
        Value bv = zeros(b, bFrag);
        for (int64_t reg = 0; reg < 2; ++reg) {
          Value c = add(b, mul(b, inGroup, 4), indexConst(b, ks * 32 + reg * 16));
          Value v = vector::LoadOp::create(b, quad, kTile, ValueRange{key, c});
          bv = vector::InsertOp::create(b, v, bv, ArrayRef<int64_t>{reg});
        }
        acc = nvgpu::MmaSyncOp::create(b, qFrags[ks], bv, acc,
                                       ArrayRef<int64_t>{16, 8, 32});
      }
      SmallVector<Value> &tile = s.emplace_back();
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t ci = 0; ci < 2; ++ci) {
          Value localKey = add(b, mul(b, inGroup, 2), indexConst(b, nt * 8 + ci));
          Value dot = vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{r, ci});
          Value v = arith::MulFOp::create(
              b, arith::MulFOp::create(b, intToF32(b, dot), rowScale[r]),
              load(b, kScales, {localKey}));
          Value j = add(b, first, localKey);
          Value masked = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, j,
                                               indexConst(b, shape.cacheKeys));
          if (shape.causal) {
            Value limit = add(b, rows[r], indexConst(b, shape.cacheKeys -
                                                            shape.queries));
            masked = arith::OrIOp::create(
                b, masked,
                arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, j, limit));
          }
          tile.push_back(arith::SelectOp::create(b, masked,
                                                 f32Const(b, -INFINITY), v));
        }
    }
    return s;
  }

  /// state = {max0, max1, sum0, sum1 (per lane), acc[d/8] (2x2 f32)}.
  SmallVector<Value> processTile(Value first, ValueRange state) {
    stageTile(first);
    gpu::BarrierOp::create(b);
    SmallVector<SmallVector<Value>> s = scores(first);

    SmallVector<Value> next(state.begin(), state.end());
    SmallVector<Value> corr(2);
    for (int64_t r = 0; r < 2; ++r) {
      Value m = state[r];
      for (auto &tile : s)
        for (int64_t ci = 0; ci < 2; ++ci)
          m = arith::MaximumFOp::create(b, m, tile[2 * r + ci]);
      m = overQuad<arith::MaximumFOp>(b, m);
      corr[r] = math::ExpOp::create(b, arith::SubFOp::create(b, state[r], m));
      next[r] = m;
      Value sum = arith::MulFOp::create(b, state[2 + r], corr[r]);
      for (auto &tile : s)
        for (int64_t ci = 0; ci < 2; ++ci) {
          tile[2 * r + ci] = math::ExpOp::create(
              b, arith::SubFOp::create(b, tile[2 * r + ci], m));
          sum = arith::AddFOp::create(b, sum, tile[2 * r + ci]);
        }
      next[2 + r] = sum;
    }
    auto accType = VectorType::get({2, 2}, b.getF32Type());
    Value corrVec = vector::FromElementsOp::create(
        b, accType, ValueRange{corr[0], corr[0], corr[1], corr[1]});
    for (int64_t u = 0; u < shape.headDim / 8; ++u)
      next[4 + u] = arith::MulFOp::create(b, state[4 + u], corrVec);

    // P.V: the score fragments of n tiles 2k and 2k+1 are the A fragment of
    // k step k (m16n8k16 .f16).
    auto aType = VectorType::get({4, 2}, b.getF16Type());
    auto bType = VectorType::get({2, 2}, b.getF16Type());
    auto pair = VectorType::get({2}, b.getF16Type());
    for (int64_t k = 0; k < kTileKeys / 16; ++k) {
      SmallVector<Value> p;
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t ci = 0; ci < 2; ++ci)
            p.push_back(fromF32(b, s[2 * k + half][2 * r + ci], b.getF16Type()));
      Value a = vector::FromElementsOp::create(b, aType, p);
      for (int64_t u = 0; u < shape.headDim / 8; ++u) {
        Value c = add(b, group, indexConst(b, u * 8));
        Value bv = zeros(b, bType);
        for (int64_t reg = 0; reg < 2; ++reg) {
          Value key = add(b, mul(b, inGroup, 2), indexConst(b, k * 16 + reg * 8));
          Value v = vector::LoadOp::create(b, pair, vTile, ValueRange{c, key});
          bv = vector::InsertOp::create(b, v, bv, ArrayRef<int64_t>{reg});
        }
        next[4 + u] = nvgpu::MmaSyncOp::create(b, a, bv, next[4 + u],
                                               ArrayRef<int64_t>{16, 8, 16});
      }
    }
    // The next tile overwrites shared memory only after every warp is done.
    gpu::BarrierOp::create(b);
    return next;
  }

  void storeOutput(Value out, ArrayRef<Value> st) {
    for (int64_t r = 0; r < 2; ++r) {
      Value sum = overQuad<arith::AddFOp>(b, st[2 + r]);
      Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rows[r],
                                            indexConst(b, shape.queries));
      auto ifOp = scf::IfOp::create(b, inRange, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      for (int64_t u = 0; u < shape.headDim / 8; ++u)
        for (int64_t ci = 0; ci < 2; ++ci) {
          Value v = vector::ExtractOp::create(b, st[4 + u], ArrayRef<int64_t>{r, ci});
          Value c = add(b, mul(b, inGroup, 2), indexConst(b, u * 8 + ci));
          store(b, fromF32(b, arith::DivFOp::create(b, v, sum), outType), out,
                {bi, h, rows[r], c});
        }
    }
  }

  ImplicitLocOpBuilder &b;
  const AttentionShape &shape;
  const AttentionView &view;
  Type outType;
  Value kTile, vTile, kScales, tid, group, inGroup, bi, h, hk;
  SmallVector<Value> rows, clampedRows, qFrags, rowScale;
};
} // namespace

void mlir::qattn::kernels::emitMmaAttention(ImplicitLocOpBuilder &b,
                                            const AttentionShape &shape,
                                            const AttentionView &view,
                                            Type outType, Value out,
                                            gpu::GPUFuncOp kernel) {
  MmaEmitter(b, shape, view, outType).emit(out, kernel);
}
