//===- DecodeKernel.cpp - tensor-core decode over packed 2/4-bit K/V ------===//
//
// Part of the qattn project.
//
// Decode attention (few queries, long caches) is bound by the bytes of the
// packed cache, so this kernel streams them through a per-warp cp.async ring
// into registers and leaves the dot products to mma.sync m16n8k16 (f16
// operands, f32 accumulators). A warp owns up to 16 rows, each a (query,
// query head) pair of one KV head, so the GQA heads and the speculative
// queries share every load; it walks its key slice in steps of 16 keys.
// The rows are few, so they sit on the mma's n side in 8-row blocks (one
// block for <= 8 rows): S^T = K Q^T, then O^T += V^T P^T.
//
// Lane l = 4g + t. As the A operand of S^T, lane t dequantizes the channels
// [t d/4, (t+1) d/4) of keys g and 8 + g: one vector load of packed codes per
// key. A code is masked in place within its byte and or'ed with 1024, so it
// reads as 1024 + M q (M = 2^(bit offset in the byte)), then one f16x2
// subtract (1024 + M z2) and multiply (s2 / M): exact, since q8 = (q - z2) s2
// is an integer in [-128, 127]. The pairs come out in a fixed order of
// channels; the dot product does not care, so the Q^T fragments are loaded
// in the same order. As the A operand of O^T, lane g owns channels
// [g d/8, (g+1) d/8) of keys 2t, 2t+1, 2t+8, 2t+9: the codes of two keys are
// interleaved first so that each f16x2 holds one channel of both. P^T comes
// from the S^T accumulators by a movmatrix transpose, times the keys'
// stage-1 value scale. The group constants (s2, z2 of each channel) are
// converted once per warp and step into f16 in shared memory (K as the pairs
// of the lanes' channel pairs, V as one (z2, s2) word per channel), laid out
// so that no two lanes of a load share a bank. Softmax runs in base 2 with
// the softmax scale, log2(e) and the stage-1 scales folded into one factor
// per row and step, against lazy row maxima (moved only when a score passes
// them by 2^8).
//
//===----------------------------------------------------------------------===//

#include "Dequantize.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;

static constexpr int64_t kTileRows = 16;
static constexpr int64_t kRegistersOneBlock = 128, kRegistersTwoBlocks = 168;
static constexpr int64_t kStepKeys = 16;

int64_t mlir::qattn::kernels::decodeRowTiles(const AttentionShape &shape) {
  return llvm::divideCeilSigned(shape.groupSize() * shape.queries, kTileRows);
}

namespace {
/// Byte offsets inside one slot of the decode kernel's ring: a step's 16
/// keys' K codes, then their V codes (each the head's d*bits/8 bytes of a
/// row), then the group's K s2, K z2, V s2, V z2 (d bytes each).
struct SlotLayout {
  int64_t headDim, kRow, vRow;
  SlotLayout(int64_t headDim, int64_t kBits, int64_t vBits)
      : headDim(headDim), kRow(headDim * kBits / 8), vRow(headDim * vBits / 8) {}
  int64_t kCodes() const { return 0; }
  int64_t vCodes() const { return kStepKeys * kRow; }
  /// Group constants: 0 = K s2, 1 = K z2, 2 = V s2, 3 = V z2.
  int64_t params(int64_t which) const {
    return vCodes() + kStepKeys * vRow + which * headDim;
  }
  int64_t bytes() const { return params(4); }
};

/// Byte offsets inside a warp's region of converted group constants: f16x2
/// pairs in the order the lanes consume them, read 16 bytes (4 pairs) at a
/// time. K: s2 then z2 pairs; lane t's d/8 pairs in chunks of 4, chunk j at
/// [j][t], so that the four lanes t of a load read adjacent chunks (at
/// [t][j] they sat 64 bytes apart, two to a bank: twice the wavefronts). V:
/// one word per channel, its z2 constant in the low half and its s2
/// constant in the high half (the dequantization takes each half as a
/// broadcast pair), lane g's d/8 channels at [g][u].
struct ConstLayout {
  int64_t headDim;
  explicit ConstLayout(int64_t headDim) : headDim(headDim) {}
  int64_t kPairs(int64_t which) const { return which * 2 * headDim; }
  int64_t vWords() const { return 4 * headDim; }
  int64_t bytes() const { return 8 * headDim; }
  /// Strides of a lane's chunks and of the lanes' first chunks, in bytes.
  static constexpr int64_t keyChunkStride = 4 * 16, keyLaneStride = 16;
  static constexpr int64_t valueChunkStride = 16;
  int64_t valueLaneStride() const { return headDim / 2; }
};
} // namespace

int64_t mlir::qattn::kernels::decodeSlotBytes(int64_t headDim, Stage2Attr k,
                                              Stage2Attr v, int64_t kvHeads) {
  int64_t widest = 0;
  for (int64_t h = 0; h < kvHeads; ++h)
    widest = std::max(widest, SlotLayout(headDim, k.getBitsOfHead(h),
                                         v.getBitsOfHead(h))
                                  .bytes());
  return widest;
}

int64_t mlir::qattn::kernels::decodeWarpSharedBytes(const AttentionShape &shape,
                                                    Stage2Attr k, Stage2Attr v) {
  return shape.stages * decodeSlotBytes(shape.headDim, k, v, shape.kvHeads) +
         ConstLayout(shape.headDim).bytes();
}

std::pair<int64_t, int64_t>
mlir::qattn::kernels::decodeGrid(const AttentionShape &shape) {
  int64_t tasks = shape.batch * shape.kvHeads * decodeRowTiles(shape);
  return {shape.splits, llvm::divideCeilSigned(tasks, shape.warps)};
}

namespace {
class DecodeEmitter {
public:
  DecodeEmitter(ImplicitLocOpBuilder &b, const AttentionShape &shape,
                const AttentionView &view, Type outType)
      : b(b), shape(shape), view(view), outType(outType) {}

  void emit(ValueRange outputs, gpu::GPUFuncOp kernel) {
    // A tile of <= 8 rows is one 8-row block on the mma's n side, else two.
    rowBlocks = groupRows() <= 8 ? 1 : kTileRows / 8;
    // Latency is hidden by warps, not by registers: ask ptxas for 128
    // registers a thread with one row block (16 warps per SM; it picks ~150
    // unasked), 168 with two (their accumulators need them).
    int64_t budget = rowBlocks == 1 ? kRegistersOneBlock : kRegistersTwoBlocks;
    int64_t ctas = std::max<int64_t>(
        1, shape.chip.registersPerSM / (shape.warps * kThreadsPerWarp * budget));
    kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    b.getI32IntegerAttr(ctas));
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    lane = rem(b, tid, kThreadsPerWarp);
    warp = div(b, tid, kThreadsPerWarp);
    if (shape.stages > 1) {
      // Each warp's ring of `stages` slots, sized for the widest head, then
      // its converted group constants.
      ringSlot = decodeSlotBytes(shape.headDim, view.k.stage2, view.v.stage2,
                                 shape.kvHeads);
      warpBytes = decodeWarpSharedBytes(shape, view.k.stage2, view.v.stage2);
      auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                           gpu::AddressSpace::Workgroup);
      ring = kernel.addWorkgroupAttribution(
          MemRefType::get({shape.warps * warpBytes}, b.getI8Type(), nullptr, wg),
          b.getLoc());
      // cp.async and the 16-byte reads need 16-byte aligned slots.
      alignWorkgroupBuffers(kernel);
    }
    g = div(b, lane, 4);
    t = rem(b, lane, 4);
    Value task = add(b, mul(b, gpu::BlockIdOp::create(b, gpu::Dimension::y),
                            shape.warps),
                     warp);
    split = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    int64_t rowTiles = decodeRowTiles(shape);
    int64_t tasks = shape.batch * shape.kvHeads * rowTiles;
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, task,
                                          indexConst(b, tasks));
    auto ifOp = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());

    Value tile = rem(b, task, rowTiles);
    Value bk = div(b, task, rowTiles);
    hk = rem(b, bk, shape.kvHeads);
    bi = div(b, bk, shape.kvHeads);
    // The tile's rows are (query, head of the group) pairs; rows past the end
    // compute on the last one and are not stored. Row 8n + g of the tile is
    // the lane's column of the Q^T and P^T operands, rows 8n + 2t + {0, 1}
    // its columns of the S^T and O^T accumulators.
    Value first = mul(b, tile, 8 * rowBlocks);
    for (int64_t n = 0; n < rowBlocks; ++n) {
      Value base = add(b, first, indexConst(b, 8 * n));
      bRows.push_back(rowAt(add(b, base, g)));
      for (int64_t ci = 0; ci < 2; ++ci)
        cRows.push_back(rowAt(add(b, add(b, base, mul(b, t, 2)), indexConst(b, ci))));
    }
    Value lastRow = minIdx(b, add(b, first, indexConst(b, 8 * rowBlocks - 1)),
                           indexConst(b, groupRows() - 1));
    Value lastQuery = div(b, lastRow, shape.groupSize());

    // This split's keys, cut at the causal diagonal of the tile's last query.
    Value lo = mul(b, split, shape.keysPerSplit());
    Value hi = minIdx(b, add(b, lo, indexConst(b, shape.keysPerSplit())),
                indexConst(b, shape.cacheKeys));
    for (Row &r : cRows)
      r.end = causalEnd(r.query, hi);
    Value tileEnd = causalEnd(lastQuery, hi);
    lo = minIdx(b, lo, tileEnd);
    Value steps = div(b, add(b, arith::SubIOp::create(b, tileEnd, lo),
                             indexConst(b, kStepKeys - 1)),
                      kStepKeys);

    Stage2Attr k2 = view.k.stage2, v2 = view.v.stage2;
    bool mixed = k2.getBits().size() > 1 || v2.getBits().size() > 1;
    if (!mixed)
      return emitStream(lo, steps, k2.getBits().front(), v2.getBits().front(),
                        mul(b, hk, shape.headDim * k2.getBits().front() / 8),
                        mul(b, hk, shape.headDim * v2.getBits().front() / 8),
                        outputs);
    // Headwise widths: one specialization per (K width, V width) pair, so the
    // widths are constants (the branch is warp-uniform); each head's byte
    // offsets come from a select over hk.
    SmallVector<std::pair<int64_t, int64_t>> combos;
    SmallVector<int64_t> comboOf;
    for (int64_t h = 0; h < shape.kvHeads; ++h) {
      std::pair<int64_t, int64_t> c = {k2.getBitsOfHead(h), v2.getBitsOfHead(h)};
      auto *it = llvm::find(combos, c);
      comboOf.push_back(it - combos.begin());
      if (it == combos.end())
        combos.push_back(c);
    }
    auto perHead = [&](function_ref<int64_t(int64_t)> value) {
      return selectPerHead(b, hk, shape.kvHeads, value);
    };
    int64_t d = shape.headDim;
    Value kOff = perHead([&](int64_t h) { return k2.getHeadByteOffset(h, d); });
    Value vOff = perHead([&](int64_t h) { return v2.getHeadByteOffset(h, d); });
    Value combo = perHead([&](int64_t h) { return comboOf[h]; });
    SmallVector<int64_t> cases = llvm::to_vector(llvm::seq<int64_t>(0, combos.size()));
    auto sw = scf::IndexSwitchOp::create(b, TypeRange{}, combo, cases, cases.size());
    for (auto [i, c] : llvm::enumerate(combos)) {
      b.setInsertionPointToStart(&sw.getCaseRegions()[i].emplaceBlock());
      emitStream(lo, steps, c.first, c.second, kOff, vOff, outputs);
      scf::YieldOp::create(b);
    }
    b.setInsertionPointToStart(&sw.getDefaultRegion().emplaceBlock());
    scf::YieldOp::create(b);
  }

private:
  /// A row of the tile: whether it exists, its query and head (clamped to
  /// the last row), and (for accumulator rows) the end of its keys.
  struct Row {
    Value valid, query, head, end;
  };
  /// (query, head) rows per KV head.
  int64_t groupRows() const { return shape.groupSize() * shape.queries; }
  Row rowAt(Value row) {
    Row r;
    r.valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                    indexConst(b, groupRows()));
    Value rc = minIdx(b, row, indexConst(b, groupRows() - 1));
    r.query = div(b, rc, shape.groupSize());
    r.head = add(b, mul(b, hk, shape.groupSize()), rem(b, rc, shape.groupSize()));
    return r;
  }

  /// Keys [0, end) that query i may see within a slice ending at `end`.
  Value causalEnd(Value i, Value end) {
    if (!shape.causal)
      return end;
    return minIdx(b, end, add(b, i, indexConst(b, shape.cacheKeys -
                                                     shape.queries + 1)));
  }

  //===--------------------------------------------------------------------===//
  // Bits and halves
  //===--------------------------------------------------------------------===//

  Value i32(int64_t v) { return i32Const(b, v); }

  //===--------------------------------------------------------------------===//
  // The key stream
  //===--------------------------------------------------------------------===//

  /// What one step loads: packed codes of keys (2) and values (4), the
  /// group's s2/z2 bytes of the lane's channels, and the stage-1 scales.
  struct Fetched {
    SmallVector<Value> kCodes, vCodes;
    // The group constants: the raw bytes of the lane's channels (no ring),
    // or `constants`, the first byte of the warp's converted pairs.
    Value kS2, kZ2, vS2, vZ2, constants;
    Value s1k, s1v;
  };

  /// Key j0 clamped to the cache (a prefetch past the end reads the last).
  Value clampKey(Value j0) {
    return minIdx(b, j0, indexConst(b, shape.cacheKeys - 1));
  }
  /// The K and V stage-2 groups of the step at `j0` (a step lies in one
  /// group and one stage-1 block: both are multiples of 16 keys, and slices
  /// start at multiples of 16).
  std::pair<Value, Value> groupsAt(Value j0) {
    Value j = clampKey(j0);
    return {div(b, j, view.k.stage2.getGroup()),
            div(b, j, view.v.stage2.getGroup())};
  }
  /// The K and V stage-1 scales of the step at `j0`.
  std::pair<Value, Value> stage1At(Value j0) {
    Value j = clampKey(j0);
    return {stage1ScaleAt(b, view.k.scales, view.k.stage1, bi, hk, j, Value()),
            stage1ScaleAt(b, view.v.scales, view.v.stage1, bi, hk, j, Value())};
  }

  Fetched fetch(Value j0, int64_t kBits, int64_t vBits, Value kOff, Value vOff) {
    int64_t d = shape.headDim;
    auto key = [&](int64_t dj, Value lanePart) {
      return clampKey(add(b, add(b, j0, lanePart), indexConst(b, dj)));
    };
    Fetched f;
    int64_t kBytes = d / 4 * kBits / 8, vBytes = d / 8 * vBits / 8;
    for (int64_t n = 0; n < 2; ++n)
      f.kCodes.push_back(loadWords(b, 
          view.k.data, {bi, key(8 * n, g), add(b, kOff, mul(b, t, kBytes))},
          kBytes, 32));
    Value twoT = mul(b, t, 2);
    for (int64_t dj : {0, 1, 8, 9}) {
      SmallVector<Value> idx = {bi, key(dj, twoT), add(b, vOff, mul(b, g, vBytes))};
      if (vBytes >= 4) {
        f.vCodes.push_back(loadWords(b, view.v.data, idx, vBytes, 32));
        continue;
      }
      // d = 64 at 2 bits: 2 bytes, widened to one word.
      f.vCodes.push_back(widen(b, loadWords(b, view.v.data, idx, 2, 16)));
    }
    auto [kGroup, vGroup] = groupsAt(j0);
    Value kc = mul(b, t, d / 4), vc = mul(b, g, d / 8);
    f.kS2 = loadWords(b, view.k.groupScales, {bi, hk, kGroup, kc}, d / 4, 32);
    f.kZ2 = loadWords(b, view.k.zeros, {bi, hk, kGroup, kc}, d / 4, 32);
    f.vS2 = loadWords(b, view.v.groupScales, {bi, hk, vGroup, vc}, d / 8, 32);
    f.vZ2 = loadWords(b, view.v.zeros, {bi, hk, vGroup, vc}, d / 8, 32);
    std::tie(f.s1k, f.s1v) = stage1At(j0);
    return f;
  }

  //===--------------------------------------------------------------------===//
  // The shared-memory ring (stages > 1)
  //===--------------------------------------------------------------------===//

  /// Where byte `rel` of the slot's V codes sits: the 32-byte quarters of
  /// each 128-byte line are xor'ed with the line's index mod 4. A V^T
  /// fragment load takes keys 2t + dj of the lanes' t, rows 2 apart: 4 * 64
  /// bytes apart at 4 bits, the same banks; swizzled, the quarter warps'
  /// reads cover all banks (at 4 bits, d = 128: 8 wavefronts per 8-byte
  /// load became 2, the ideal).
  /// A permutation of 16-byte pieces inside a line, as the copies need.
  Value swizzleValueCodes(Value rel) {
    Value line = rem(b, div(b, rel, 128), 4);
    return arith::XOrIOp::create(b, rel, mul(b, line, 32));
  }

  /// cp.async.cg of the 16 bytes at `idx` of the row-major i8 `buffer` to
  /// byte `dst` of the ring (copyAsync); for `l2Line` (the K and V codes)
  /// with .L2::128B: L2 fetches the whole
  /// 128-byte line, whose other half (the next head's codes) another warp
  /// reads about now. On the H200, a read-only model of this ring (each warp
  /// its head's 64 bytes of every 512-byte token row) streamed at 2.56 TB/s,
  /// 3.0 with the hint; at B8 N32K d128 4 bits the kernel went from 124 to
  /// 115 us (docs/PERF.md). The group constants' rows are the warp's alone:
  /// no hint.
  void copyChunk(Value dst, Value buffer, ValueRange idx, bool l2Line) {
    auto type = cast<MemRefType>(buffer.getType());
    Value offset = idx[0];
    for (auto [size, i] : llvm::zip(type.getShape().drop_front(), idx.drop_front()))
      offset = add(b, mul(b, offset, size), i);
    Value to = byteAddress(b, ring, dst, b.getI32Type());
    Value from = byteAddress(b, buffer, offset, b.getI64Type());
    copyAsync(b, to, from, 16, l2Line, /*ordered=*/false);
  }

  /// The first byte of this warp's `slot`.
  Value slotBase(Value slot) {
    return add(b, mul(b, warp, warpBytes), mul(b, slot, ringSlot));
  }
  /// The first byte of this warp's converted group constants.
  Value constBase() {
    return add(b, mul(b, warp, warpBytes),
               indexConst(b, shape.stages * ringSlot));
  }

  /// Issues the cp.async copies of the step at `j0` into `slot` (16-byte
  /// chunks spread over the lanes; keys past the end read the last key) as
  /// one commit group.
  void copyStep(Value j0, Value slot, int64_t kBits, int64_t vBits,
                 Value kOff, Value vOff) {
    int64_t d = shape.headDim;
    SlotLayout layout(d, kBits, vBits);
    Value base = slotBase(slot);
    auto [kGroup, vGroup] = groupsAt(j0);
    auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
    // One region of `chunks` 16-byte pieces at `at` in the slot; `src` maps a
    // chunk index to its source indices.
    auto region = [&](int64_t at, int64_t chunks, Value buffer,
                      function_ref<SmallVector<Value>(Value)> src,
                      bool codes = false, bool swizzled = false) {
      spreadOver(b, lane, kThreadsPerWarp, chunks, [&](Value c) {
        Value rel = mul(b, c, 16);
        if (swizzled)
          rel = swizzleValueCodes(rel);
        Value dst = add(b, base, add(b, indexConst(b, at), rel));
        if (cast<MemRefType>(buffer.getType()).getLayout().isIdentity())
          return copyChunk(dst, buffer, src(c), /*l2Line=*/codes);
        // Streamed once: bypass L1 (cp.async.cg).
        nvgpu::DeviceAsyncCopyOp::create(b, tokenType, ring, ValueRange{dst},
                                         buffer, src(c), b.getIndexAttr(16),
                                         Value(), b.getUnitAttr());
      });
    };
    auto rows = [&](int64_t rowBytes, Value off) {
      return [&, rowBytes, off](Value c) -> SmallVector<Value> {
        int64_t per = rowBytes / 16;
        Value key = clampKey(add(b, j0, div(b, c, per)));
        return {bi, key, add(b, off, mul(b, rem(b, c, per), 16))};
      };
    };
    auto params = [&](Value group) {
      return [&, group](Value c) -> SmallVector<Value> {
        return {bi, hk, group, mul(b, c, 16)};
      };
    };
    region(layout.kCodes(), kStepKeys * layout.kRow / 16, view.k.data,
           rows(layout.kRow, kOff), /*codes=*/true);
    region(layout.vCodes(), kStepKeys * layout.vRow / 16, view.v.data,
           rows(layout.vRow, vOff), /*codes=*/true, /*swizzled=*/true);
    region(layout.params(0), d / 16, view.k.groupScales, params(kGroup));
    region(layout.params(1), d / 16, view.k.zeros, params(kGroup));
    region(layout.params(2), d / 16, view.v.groupScales, params(vGroup));
    region(layout.params(3), d / 16, view.v.zeros, params(vGroup));
    // One commit group per step. NVVM's op rather than nvgpu's: most copies
    // are inline cp.async without tokens, and a token-less
    // nvgpu.device_async_create_group prints in a form that does not parse
    // back when an SSA definition follows.
    NVVM::CpAsyncCommitGroupOp::create(b);
  }

  /// The lane's operands of the step in `slot` (after its copies landed),
  /// with the stage-1 scales `s1k`, `s1v` loaded earlier.
  Fetched readSlot(Value slot, int64_t kBits, int64_t vBits, Value s1k,
                   Value s1v) {
    int64_t d = shape.headDim;
    SlotLayout layout(d, kBits, vBits);
    int64_t kBytes = d / 4 * kBits / 8, vBytes = d / 8 * vBits / 8;
    Value base = slotBase(slot);
    auto at = [&](int64_t bytes, Value offset) {
      return add(b, base, add(b, indexConst(b, bytes), offset));
    };
    Fetched f;
    for (int64_t n = 0; n < 2; ++n)
      f.kCodes.push_back(loadWords(b, 
          ring, {at(layout.kCodes(),
                    add(b, mul(b, add(b, g, indexConst(b, 8 * n)), layout.kRow),
                        mul(b, t, kBytes)))},
          kBytes, 32));
    for (int64_t dj : {0, 1, 8, 9}) {
      Value row = add(b, mul(b, t, 2), indexConst(b, dj));
      Value idx = at(layout.vCodes(),
                     swizzleValueCodes(add(b, mul(b, row, layout.vRow),
                                           mul(b, g, vBytes))));
      f.vCodes.push_back(vBytes >= 4 ? loadWords(b, ring, {idx}, vBytes, 32)
                                     : widen(b, loadWords(b, ring, {idx}, 2, 16)));
    }
    f.constants = constBase();
    f.s1k = s1k;
    f.s1v = s1v;
    return f;
  }

  void warpSync() { NVVM::SyncWarpOp::create(b, i32(-1)); }


  /// Converts the group constants of the step in `slot` once per warp into
  /// the f16x2 words of ConstLayout, so that each lane loads its words
  /// instead of rebuilding them (the mma fragments replicate a K channel in
  /// 8 lanes, a V channel in 4). Units spread over the lanes: in K one code
  /// word's pairs of one lane t, of s2 or z2 (`kind` 0 or 1); in V the
  /// (z2, s2) words of one code chunk's channels.
  void stageConstants(Value slot, int64_t kBits, int64_t vBits) {
    int64_t d = shape.headDim;
    SlotLayout from(d, kBits, vBits);
    ConstLayout to(d);
    Value src = slotBase(slot), dst = constBase();
    // Stores `pairs` (2 or 4: 8 or 16 bytes, as aligned) at `at`.
    auto storePairs = [&](ArrayRef<Value> pairs, Value at) {
      SmallVector<Value> words;
      for (Value p : pairs)
        words.push_back(vector::ExtractOp::create(
            b, vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), p),
            ArrayRef<int64_t>{0}));
      int64_t n = words.size();
      Value v = vector::FromElementsOp::create(
          b, VectorType::get({n}, b.getI32Type()), words);
      v = vector::BitCastOp::create(b, VectorType::get({4 * n}, b.getI8Type()), v);
      vector::StoreOp::create(b, v, ring, ValueRange{at}, /*nontemporal=*/false,
                              llvm::Align(4 * n));
    };

    // K: lane t's run of d/4 channels holds `words` code words; word w's
    // pairs are the first word's, shifted by w * perWord channels. Unit
    // (w, half, t) with t fastest converts the s2 and z2 pairs of one half
    // of word w's pairs (so that it can make fusesAt's c), and a quarter
    // warp stores adjacent pieces of chunks.
    int64_t words = d / 4 * kBits / 32, perWord = 32 / kBits, pairs = 16 / kBits;
    int64_t perUnit = pairs / 2;
    assert((kBits == 2 || kBits == 4) && "byte-aligned pairs of codes");
    auto kp = keyPairs(shape.headDim, kBits, view.k.stage2.getOrder());
    Stage2Anchor kAnchor = view.k.stage2.getAnchor();
    spreadOver(b, lane, kThreadsPerWarp, 2 * 4 * words, [&](Value unit) {
      Value lt = rem(b, unit, 4), half = rem(b, div(b, unit, 4), 2);
      Value w = div(b, unit, 8);
      // The half's pairs take channels [half, half + 1) * perUnit of the
      // word's low 16 bits and as many of its high 16 (perWord / 2 on): two
      // runs of perUnit bytes of s2 and of z2 (2 at 4 bits, 4 at 2).
      Value run = add(b, add(b, src, indexConst(b, from.params(0))),
                      add(b, add(b, mul(b, lt, d / 4), mul(b, w, perWord)),
                          mul(b, half, perUnit)));
      auto bytesAt = [&](int64_t at) {
        Value idx = add(b, run, indexConst(b, at));
        return perUnit >= 4 ? loadWords(b, ring, {idx}, perUnit, 32)
                            : widen(b, loadWords(b, ring, {idx}, perUnit, 16));
      };
      Value sLo = bytesAt(0), sHi = bytesAt(perWord / 2);
      Value zLo = bytesAt(d), zHi = bytesAt(d + perWord / 2);
      SmallVector<Value> sOut, zOut;
      for (int64_t j = 0; j < perUnit; ++j) {
        // Pair j of the half has the shift (so M) of pair j of the word:
        // the halves lie 8 bits apart.
        auto [sc, zc] = groupPairs(b, {sLo, sHi}, {zLo, zHi}, kp[j].first,
                                   kp[j].second - perWord / 2, j * kBits, kBits,
                                   kAnchor);
        sOut.push_back(sc);
        zOut.push_back(zc);
      }
      // Pair p = w * pairs + j of lane t sits in chunk p / 4 (ConstLayout),
      // at byte 4 (p % 4).
      Value first = add(b, mul(b, w, pairs), mul(b, half, perUnit));
      Value at = add(b, add(b, dst, indexConst(b, to.kPairs(0))),
                     add(b, mul(b, lt, ConstLayout::keyLaneStride),
                         add(b, mul(b, div(b, first, 4), ConstLayout::keyChunkStride),
                             mul(b, rem(b, first, 4), 4))));
      storePairs(sOut, at);
      storePairs(zOut, add(b, at, indexConst(b, to.kPairs(1) - to.kPairs(0))));
    });

    // V: units of the channels of one 16-bit code chunk (4 at 4 bits, 8 at
    // 2), so that a word's code shift is its index in the unit; the pack
    // order permutes channels only inside bytes, so a unit keeps its
    // channels. Consecutive lanes store consecutive chunks.
    auto vc = valueChannels(shape.headDim, vBits, view.v.stage2.getOrder());
    int64_t perChunk = 16 / vBits;
    assert(llvm::all_of(llvm::seq<int64_t>(0, vc.size()),
                        [&](int64_t u) {
                          return vc[u] / perChunk == u / perChunk &&
                                 vc[u] % perChunk == vc[u % perChunk];
                        }) &&
           "channels leave their code chunk");
    int64_t units = d / perChunk;
    Stage2Anchor vAnchor = view.v.stage2.getAnchor();
    // The z2 byte takes the zero's bias flip, the s2 byte none.
    Value lowFlip = i32(0x00000080);
    spreadOver(b, lane, kThreadsPerWarp, units, [&](Value unit) {
      Value first = mul(b, unit, perChunk);
      auto raw = [&](int64_t which) {
        return loadWords(b, ring, {add(b, add(b, src, indexConst(b, from.params(which))), first)},
                         perChunk, 32);
      };
      Value s2 = raw(2), z2 = raw(3);
      SmallVector<Value> out;
      for (int64_t j = 0; j < perChunk; ++j) {
        int64_t m = codeScale(j * vBits);
        Value word = constPair(b, bytePair(b, z2, vc[j], s2, vc[j]), lowFlip,
                               affinePair(b, zeroAffine(m, vAnchor), scaleAffine(m)));
        if (fusesAt(j * vBits, vBits)) {
          // (z, s) -> (c, s): once here instead of in each lane using it.
          auto half = [&](int64_t h) {
            return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{h});
          };
          Value sv = half(1);
          word = vector::FromElementsOp::create(
              b, word.getType(),
              ValueRange{fusedConstant(b, sv, half(0), vAnchor), sv});
        }
        out.push_back(word);
      }
      Value vBase = add(b, add(b, dst, indexConst(b, to.vWords())), mul(b, first, 4));
      for (int64_t c = 0; c < perChunk / 4; ++c)
        storePairs(ArrayRef<Value>(out).slice(4 * c, 4),
                   add(b, vBase, indexConst(b, 16 * c)));
    });
  }

  /// The lane's Q^T columns (row 8n + g of each row block) at its K
  /// channels, as the B fragments of the d/16 S^T k steps; and the score
  /// factor of each accumulator row.
  void loadQueries(int64_t bits, PackOrder order) {
    int64_t n = shape.headDim / 4;
    auto pairs = keyPairs(shape.headDim, bits, order);
    Value c0 = mul(b, t, n);
    auto bType = VectorType::get({2, 2}, b.getF16Type());
    qFrags.clear();
    for (const Row &row : bRows) {
      SmallVector<Value> q;
      for (int64_t c = 0; c < n; ++c) {
        Value x = load(b, view.q, {bi, row.head, row.query, add(b, c0, indexConst(b, c))});
        q.push_back(view.qScales
                        ? arith::SIToFPOp::create(b, b.getF16Type(), x).getResult()
                        : fromF32(b, toF32(b, x), b.getF16Type()));
      }
      for (int64_t k = 0; k < shape.headDim / 16; ++k) {
        auto [lo0, hi0] = pairs[2 * k];
        auto [lo1, hi1] = pairs[2 * k + 1];
        qFrags.push_back(vector::FromElementsOp::create(
            b, bType, ValueRange{q[lo0], q[hi0], q[lo1], q[hi1]}));
      }
    }
    rowFactor.clear();
    for (const Row &row : cRows) {
      Value factor = f32Const(b, shape.scale * M_LOG2E);
      if (view.qScales)
        factor = arith::MulFOp::create(
            b, factor,
            stage1ScaleAt(b, view.qScales, view.qStage1, bi, row.head, row.query,
                          Value()));
      rowFactor.push_back(factor);
    }
  }

  /// A lane's d/8 converted constant words, loaded 16 bytes at a time on
  /// first use: word i of `owner` at base + offset + owner * laneStride +
  /// (i / 4) * chunkStride + (i % 4) * 4.
  struct WordLoader {
    DecodeEmitter &e;
    Value first;
    int64_t chunkStride;
    SmallVector<Value> chunks;
    WordLoader(DecodeEmitter &e, Value base, int64_t offset, Value owner,
               int64_t laneStride, int64_t chunkStride, int64_t d)
        : e(e), chunkStride(chunkStride) {
      if (!base)
        return;
      first = add(e.b, add(e.b, base, mul(e.b, owner, laneStride)),
                  indexConst(e.b, offset));
      chunks.resize(d / 32);
    }
    Value at(int64_t i) {
      Value &c = chunks[i / 4];
      if (!c)
        c = loadWords(e.b, e.ring,
                        {add(e.b, first, indexConst(e.b, chunkStride * (i / 4)))},
                        16, 32);
      return half2(e.b, vector::ExtractOp::create(e.b, c, ArrayRef<int64_t>{i % 4}));
    }
  };
  /// One 16-key step with the rows on the mma's n side (a decode tile has
  /// few rows): S^T = K Q^T and O^T += V^T P^T, K and V^T the A operands.
  /// state = {max (base 2) and lane-partial sum of each accumulator row,
  /// then the O^T accumulators [row block][d/16 channel tiles]}.
  SmallVector<Value> step(Value j0, const Fetched &f, ValueRange state,
                          int64_t kBits, int64_t vBits) {
    int64_t d = shape.headDim, kSteps = d / 16;
    int64_t rows = cRows.size();
    PackOrder kOrder = view.k.stage2.getOrder(), vOrder = view.v.stage2.getOrder();
    Stage2Anchor kAnchor = view.k.stage2.getAnchor();
    Stage2Anchor vAnchor = view.v.stage2.getAnchor();
    auto kp = keyPairs(shape.headDim, kBits, kOrder);

    // S^T of keys j0 + g + 8h (h = 0, 1) against the accumulator rows; two
    // independent mma chains over the k steps (four spilled at 128
    // registers at B1 and were no faster at B8 on the H200).
    auto cType = VectorType::get({2, 2}, b.getF32Type());
    Value zeroC = zeros(b, cType);
    int64_t chains = 2 / rowBlocks;
    SmallVector<Value> partial(rowBlocks * chains, zeroC);
    int64_t pairsPerWord = 16 / kBits;
    // Group constants are made or loaded next to their use: short live ranges.
    ConstLayout cl(d);
    WordLoader kS(*this, f.constants, cl.kPairs(0), t, ConstLayout::keyLaneStride,
                  ConstLayout::keyChunkStride, d);
    WordLoader kZ(*this, f.constants, cl.kPairs(1), t, ConstLayout::keyLaneStride,
                  ConstLayout::keyChunkStride, d);
    for (int64_t k = 0; k < kSteps; ++k) {
      Value pairs[2][2]; // [reg][key half]
      for (int64_t reg = 0; reg < 2; ++reg) {
        int64_t p = 2 * k + reg;
        int64_t shift = p % pairsPerWord * kBits;
        auto [sc, zc] = f.constants ? std::pair(kS.at(p), kZ.at(p))
                                    : groupPairs(b, {f.kS2, f.kS2}, {f.kZ2, f.kZ2},
                                                 kp[p].first, kp[p].second,
                                                 shift, kBits, kAnchor);
        for (int64_t h = 0; h < 2; ++h) {
          Value word = vector::ExtractOp::create(
              b, f.kCodes[h], ArrayRef<int64_t>{p / pairsPerWord});
          pairs[reg][h] = dequantPair(b, word, shift, kBits, sc, zc, kAnchor);
        }
      }
      Value a = fragment(b, {pairs[0][0], pairs[0][1], pairs[1][0], pairs[1][1]});
      for (int64_t n = 0; n < rowBlocks; ++n) {
        Value &acc = partial[n * chains + k % chains];
        acc = nvgpu::MmaSyncOp::create(b, a, qFrags[n * kSteps + k], acc,
                                       ArrayRef<int64_t>{16, 8, 16});
      }
    }
    // s[row][h]: scaled scores in base 2, -inf past the row's keys.
    SmallVector<SmallVector<Value>> s(rows);
    for (int64_t n = 0; n < rowBlocks; ++n) {
      Value acc = partial[n * chains];
      for (int64_t c = 1; c < chains; ++c)
        acc = arith::AddFOp::create(b, acc, partial[n * chains + c]);
      for (int64_t ci = 0; ci < 2; ++ci) {
        int64_t r = 2 * n + ci;
        Value factor = arith::MulFOp::create(b, rowFactor[r], f.s1k);
        for (int64_t h = 0; h < 2; ++h) {
          Value key = add(b, add(b, j0, g), indexConst(b, 8 * h));
          Value v = arith::MulFOp::create(
              b, vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{h, ci}),
              factor);
          Value masked = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, key,
                                               cRows[r].end);
          s[r].push_back(arith::SelectOp::create(b, masked,
                                                 f32Const(b, -INFINITY), v));
        }
      }
    }

    // Online softmax, base 2, with lazy maxima: a row's reference max moves
    // only when one of its scores passes it by more than kLazyMaxLog2; then
    // (a warp-uniform branch) every row takes its true max and the sums and
    // accumulators are rescaled. Most steps skip the max reduction, the
    // corrections and the rescale; unmoved, p = 2^(s - ref) <= 2^kLazyMaxLog2,
    // fine in f16 (P^T) and in the f32 sums. Any reference is exact: the
    // split's (max, sum, O) agree with each other. A row that has seen only
    // masked keys keeps max -inf and subtracts 0 instead (no inf - inf).
    SmallVector<Value> next(state.begin(), state.end());
    Value passed;
    for (int64_t r = 0; r < rows; ++r) {
      Value bar = arith::AddFOp::create(b, state[r], f32Const(b, kLazyMaxLog2));
      for (Value x : s[r]) {
        Value p = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, bar);
        passed = passed ? arith::OrIOp::create(b, passed, p).getResult() : p;
      }
    }
    ValueRange held = state.take_front(2 * rows + rowBlocks * kSteps);
    SmallVector<Value> moved = ifAnyLane(b, passed, held, [&] {
      SmallVector<Value> out, corr(rows);
      for (int64_t r = 0; r < rows; ++r) {
        Value m = state[r];
        for (Value x : s[r])
          m = arith::MaximumFOp::create(b, m, x);
        out.push_back(overColumn<arith::MaximumFOp>(b, m));
        corr[r] = exp2Ftz(
            b, arith::SubFOp::create(b, state[r], finiteRef(b, out[r])));
      }
      for (int64_t r = 0; r < rows; ++r)
        out.push_back(arith::MulFOp::create(b, state[rows + r], corr[r]));
      for (int64_t i = 0; i < rowBlocks * kSteps; ++i) {
        int64_t n = i / kSteps;
        Value c = vector::FromElementsOp::create(
            b, cType,
            ValueRange{corr[2 * n], corr[2 * n + 1], corr[2 * n], corr[2 * n + 1]});
        out.push_back(arith::MulFOp::create(b, state[2 * rows + i], c));
      }
      return out;
    });
    for (int64_t r = 0; r < rows; ++r) {
      next[r] = moved[r];
      Value ref = finiteRef(b, next[r]);
      Value sum = moved[rows + r];
      for (Value &p : s[r]) {
        p = exp2Ftz(b, arith::SubFOp::create(b, p, ref));
        sum = arith::AddFOp::create(b, sum, p);
      }
      next[rows + r] = sum;
    }
    SmallVector<Value> accs(ArrayRef<Value>(moved).drop_front(2 * rows));

    // P^T times the step's stage-1 value scale, as the B fragments: the S^T
    // accumulators hold (key g (+8), rows 2t, 2t+1), the B operand wants
    // (keys 2t, 2t+1 (+8), row g): a movmatrix transpose per 8 keys.
    SmallVector<Value> pT;
    for (int64_t n = 0; n < rowBlocks; ++n) {
      SmallVector<Value> regs;
      for (int64_t h = 0; h < 2; ++h) {
        SmallVector<Value> both;
        for (int64_t ci = 0; ci < 2; ++ci)
          both.push_back(fromF32(
              b, arith::MulFOp::create(b, s[2 * n + ci][h], f.s1v), b.getF16Type()));
        regs.push_back(transpose8x8(b, vector::FromElementsOp::create(
            b, VectorType::get({2}, b.getF16Type()), both)));
      }
      pT.push_back(fragment(b, regs));
    }

    // V^T: channel tile i holds the lane's channels 2i (row g) and 2i + 1
    // (row g + 8) of keys (2t, 2t+1) and (2t+8, 2t+9), the codes of two keys
    // interleaved per 16-bit chunk so that a pair holds one channel of both.
    auto vc = valueChannels(shape.headDim, vBits, vOrder);
    int64_t perChunk = 16 / vBits;
    WordLoader vWords(*this, f.constants, cl.vWords(), g, cl.valueLaneStride(),
                      ConstLayout::valueChunkStride, d);
    auto valuePairs = [&](int64_t u) {
      Value vs, vz;
      if (f.constants) {
        Value word = vWords.at(u);
        vz = broadcastHalf(b, word, 0);
        vs = broadcastHalf(b, word, 1);
      } else {
        std::tie(vs, vz) = groupPairs(b, {f.vS2, f.vS2}, {f.vZ2, f.vZ2}, vc[u],
                                      vc[u], u % perChunk * vBits, vBits,
                                      vAnchor);
      }
      int64_t h = u / perChunk; // the 16-bit chunk holding channel u
      SmallVector<Value> regs;
      for (int64_t reg = 0; reg < 2; ++reg) {
        // Chunk h of key 2t (+8) in the low half, of key 2t+1 (+9) above.
        auto word = [&](Value codes) {
          return vector::ExtractOp::create(b, codes, ArrayRef<int64_t>{h / 2});
        };
        int64_t byte = 2 * (h % 2);
        int64_t sel = byte | (byte + 1) << 4 | (4 + byte) << 8 | (5 + byte) << 12;
        Value both = NVVM::PermuteOp::create(
            b, b.getI32Type(), word(f.vCodes[2 * reg]),
            word(f.vCodes[2 * reg + 1]), i32(sel), NVVM::PermuteMode::DEFAULT);
        regs.push_back(dequantPair(b, both, (u % perChunk) * vBits, vBits, vs, vz,
                                   vAnchor));
      }
      return regs;
    };
    for (int64_t i = 0; i < kSteps; ++i) {
      SmallVector<Value> lo = valuePairs(2 * i), hi = valuePairs(2 * i + 1);
      Value a = fragment(b, {lo[0], hi[0], lo[1], hi[1]});
      for (int64_t n = 0; n < rowBlocks; ++n) {
        Value &acc = accs[n * kSteps + i];
        acc = nvgpu::MmaSyncOp::create(b, a, pT[n], acc,
                                       ArrayRef<int64_t>{16, 8, 16});
      }
    }
    for (auto [i, acc] : llvm::enumerate(accs))
      next[2 * rows + i] = acc;
    return next;
  }

  void emitStream(Value lo, Value steps, int64_t kBits, int64_t vBits,
                  Value kOff, Value vOff, ValueRange outputs) {
    loadQueries(kBits, view.k.stage2.getOrder());
    int64_t rows = cRows.size();
    SmallVector<Value> init(rows, f32Const(b, -INFINITY));
    init.append(rows, f32Const(b, 0.0));
    init.append(rowBlocks * shape.headDim / 16,
                zeros(b, VectorType::get({2, 2}, b.getF32Type())));
    size_t ns = init.size();
    auto firstKey = [&](Value it) { return add(b, lo, mul(b, it, kStepKeys)); };
    SmallVector<Value> st;
    if (shape.stages <= 1) {
      st = reduceRange(b, indexConst(b, 0), steps, init,
                       [&](Value it, ValueRange state) {
        Value j0 = firstKey(it);
        return step(j0, fetch(j0, kBits, vBits, kOff, vOff), state, kBits, vBits);
      });
    } else {
      // A ring of `stages` slots: steps it+1 .. it+stages-1 are in flight
      // (cp.async) while step it is computed; the stage-1 scales of the
      // steps in flight ride along in registers.
      int64_t depth = shape.stages;
      auto scales = [&](Value j0) {
        auto [k, v] = stage1At(j0);
        return SmallVector<Value>{k, v};
      };
      SmallVector<Value> carried(init);
      for (int64_t p = 0; p + 1 < depth; ++p) {
        Value j0 = firstKey(indexConst(b, p));
        copyStep(j0, indexConst(b, p), kBits, vBits, kOff, vOff);
        llvm::append_range(carried, scales(j0));
      }
      SmallVector<Value> out = reduceRange(
          b, indexConst(b, 0), steps, carried, [&](Value it, ValueRange state) {
            // Every lane is done reading the slot step it-1 used.
            warpSync();
            Value ahead = add(b, it, indexConst(b, depth - 1));
            copyStep(firstKey(ahead), rem(b, ahead, depth), kBits, vBits, kOff,
                     vOff);
            SmallVector<Value> aheadScales = scales(firstKey(ahead));
            // All but the newest depth-1 groups are complete: step it's is.
            NVVM::CpAsyncWaitGroupOp::create(b, depth - 1);
            warpSync();
            Value slot = rem(b, it, depth);
            stageConstants(slot, kBits, vBits);
            warpSync();
            ValueRange held = state.drop_front(ns);
            Fetched f = readSlot(slot, kBits, vBits, held[0], held[1]);
            SmallVector<Value> r = step(firstKey(it), f, state.take_front(ns),
                                        kBits, vBits);
            llvm::append_range(r, held.drop_front(2));
            llvm::append_range(r, aheadScales);
            return r;
          });
      // Nothing may still be writing the ring when the warp leaves.
      NVVM::CpAsyncCommitGroupOp::create(b);
      NVVM::CpAsyncWaitGroupOp::create(b, 0);
      st.assign(out.begin(), out.begin() + ns);
    }
    writeRows(st, vBits, view.v.stage2.getOrder(), outputs);
  }

  void writeRows(ArrayRef<Value> st, int64_t vBits, PackOrder vOrder,
                 ValueRange outputs) {
    auto vc = valueChannels(shape.headDim, vBits, vOrder);
    int64_t perLane = shape.headDim / 8, rows = cRows.size();
    int64_t kSteps = shape.headDim / 16;
    for (int64_t r = 0; r < rows; ++r) {
      const Row &row = cRows[r];
      Value sum = overColumn<arith::AddFOp>(b, st[rows + r]);
      auto ifOp = scf::IfOp::create(b, row.valid, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Value flat = add(b, mul(b, add(b, mul(b, bi, shape.qHeads), row.head),
                              shape.queries),
                       row.query);
      // Accumulator (n, i) holds channels 2i and 2i + 1 of the lane's run.
      for (int64_t i = 0; i < kSteps; ++i)
        for (int64_t half = 0; half < 2; ++half) {
          Value acc = vector::ExtractOp::create(
              b, st[2 * rows + (r / 2) * kSteps + i],
              ArrayRef<int64_t>{half, r % 2});
          Value ch = add(b, mul(b, g, perLane), indexConst(b, vc[2 * i + half]));
          if (shape.splits == 1)
            store(b, fromF32(b, arith::DivFOp::create(b, acc, sum), outType),
                  outputs[0], {bi, row.head, row.query, ch});
          else
            store(b, acc, outputs[0], {flat, split, ch});
        }
      if (shape.splits == 1)
        continue;
      // The combine kernel works in natural-log units.
      Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, g,
                                          indexConst(b, 0));
      auto lead = scf::IfOp::create(b, first, false);
      b.setInsertionPoint(lead.thenBlock()->getTerminator());
      Value m = arith::MulFOp::create(b, st[r], f32Const(b, M_LN2));
      store(b, m, outputs[1], {flat, split, indexConst(b, 0)});
      store(b, sum, outputs[1], {flat, split, indexConst(b, 1)});
    }
  }

  ImplicitLocOpBuilder &b;
  const AttentionShape &shape;
  const AttentionView &view;
  Type outType;
  Value lane, g, t, warp, split, hk, bi;
  Value ring;            // workgroup bytes: per warp, `stages` slots + constants
  int64_t ringSlot = 0;  // bytes per slot
  int64_t warpBytes = 0; // bytes per warp
  int64_t rowBlocks = 1;      // 8-row blocks of the tile (n-side mma tiles)
  SmallVector<Row> bRows;     // per row block: the lane's operand row 8n + g
  SmallVector<Row> cRows;     // accumulator rows 8n + 2t + ci, at 2n + ci
  SmallVector<Value> rowFactor, qFrags;
};
} // namespace

void mlir::qattn::kernels::emitDecodeAttention(ImplicitLocOpBuilder &b,
                                               const AttentionShape &shape,
                                               const AttentionView &view,
                                               Type outType, ValueRange outputs,
                                               gpu::GPUFuncOp kernel) {
  DecodeEmitter(b, shape, view, outType).emit(outputs, kernel);
}
