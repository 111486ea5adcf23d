//===- MmaKernel.cpp - tensor-core prefill attention for BPQ int8 queries -===//
//
// Part of the qattn project.
//
// Prefill attention is compute-bound, so the key stream must reach the
// tensor cores without per-CTA dequantization work. Two launches:
//
// 1. The stage kernel decodes K once to its int8 stage-1 codes (stage 2
//    undone in integers) with one f32 scale per key, and V to f16 values,
//    into scratch laid out [batch, KV head, key, channel] and padded with
//    zeros to whole 64-key tiles (a thread per 16 channels of a key or of a
//    run of keys, 16-byte vector loads and stores). Every query CTA of a head
//    reads these.
//
// 2. The attention kernel: a CTA of W warps owns 16 W query rows of one query
//    head (16 per warp, one m16 tile) and walks the keys in tiles of 64. Its
//    threads copy each tile (int8 K rows, f16 V rows, key scales) with
//    cp.async into a ring of `stages` slots in dynamic shared memory, stages-1
//    tiles ahead of the math, one barrier per tile. The 16-byte chunks of a
//    row are XOR-swizzled by the row so that ldmatrix reads hit 8 distinct
//    bank groups. ldmatrix feeds the int8 K fragments of QK^T (m16n8k32 s8)
//    and, transposed, the f16 V fragments of P.V (m16n8k16); P comes from
//    the score fragments. The online softmax runs in base 2 with the query's
//    scale, the softmax scale, log2(e) and (when stage-1 key blocks cover
//    whole tiles) the tile's key scale folded into one FMA per score, which
//    reads the int32 dot products through a float bias (no I2F), against
//    lazy row maxima (moved only when a tile passes them by 2^8, so the
//    accumulators are seldom rescaled). Only the tiles that hold masked keys
//    (the ragged end, the causal diagonal) pay for the mask. Causal CTAs
//    start with the longest rows so that the tail of the grid is short.
//
// The warpgroup variant (kernel = wgmma) keeps the launches and the
// softmax but hands the products to Hopper's wgmma: each warpgroup of the
// CTA owns 64 rows, and all share one ring of tiles. The stage launch writes
// each tile as the image of a ring slot (V transposed so that both B
// operands, K and V^T, are K-major rows, kept in the swizzle of their width
// that wgmma's shared-memory descriptors name), so one thread moves a tile
// with bulk copies that complete on an mbarrier. QK^T is wgmma m64n64k32 s8
// with the queries, copied once into shared memory like a K tile, as A (in
// registers they would hold 16 a thread, which the e4m3 kernel needs to fit
// 4 CTAs per SM), P.V wgmma m64n{d}k16 f16 with P from registers (the score
// fragments, as in the mma.sync kernel), so no operand goes through ldmatrix
// and no P goes through shared memory.
//
// Fragment layouts follow the PTX ISA's mma.m16n8k32 (.s8), mma.m16n8k16
// (.f16), ldmatrix and wgmma register maps (wgmma's accumulators and
// register A operands are, per warp, mma.sync's for the warp's 16 rows).
//
//===----------------------------------------------------------------------===//

#include "KernelCommon.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <vector>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;

static constexpr int64_t kRowsPerWarp = 16;
static constexpr int64_t kTileKeys = 64;
static constexpr int64_t kStageThreads = 256;
static constexpr int64_t kChunkBytes = 16;
// f32 1.5 * 2^23 has unit steps: its bit pattern plus an int32 |v| < 2^22
// (an int8 dot product over d <= 128 channels is below 2^21) reads as
// 1.5 * 2^23 + v exactly.
static constexpr double kDotBias = 12582912.0;
static constexpr int64_t kDotBiasBits = 0x4B400000;
// With e4m3 P a tile's max may pass its row's reference by only 2^3 before
// the reference moves (softmaxTile; f16 P: kLazyMaxLog2).
static constexpr double kLazyMaxLog2E4m3 = 3.0;
// setmaxnreg targets with a producer warpgroup and two others: 128 * 24 +
// 256 * 240 fits the 65536 registers that 384 threads at 168 hold.
static constexpr uint32_t kProducerRegisters = 24, kConsumerRegisters = 240;

std::pair<int64_t, int64_t>
mlir::qattn::kernels::mmaGrid(const AttentionShape &shape) {
  return {llvm::divideCeilSigned(shape.queries, shape.warps * kRowsPerWarp),
          shape.batch * shape.qHeads};
}

int64_t mlir::qattn::kernels::mmaStagedKeys(const AttentionShape &shape) {
  return llvm::alignTo(shape.cacheKeys, kTileKeys);
}

SmallVector<int64_t>
mlir::qattn::kernels::mmaStagedVShape(const AttentionShape &shape) {
  int64_t keys = mmaStagedKeys(shape), d = shape.headDim;
  // The wgmma kernel reads V transposed (channels x keys): wgmma's f16 or
  // e4m3 B operand, K-major like every other operand; each tile is
  // contiguous, as one bulk copy wants.
  if (shape.wgmma)
    return {shape.batch, shape.kvHeads, keys / kTileKeys, d, kTileKeys};
  return {shape.batch, shape.kvHeads, keys, d};
}

namespace {
/// Where one ring slot keeps a tile: int8 K rows, then f16 V rows, then the
/// f32 key scales. The K and V regions of all slots are contiguous, so the
/// ring is three arrays: K codes [stages][64][d], V [stages][64][d], scales
/// [stages][64].
struct RingLayout {
  int64_t headDim, stages;
  int64_t kBytes() const { return stages * kTileKeys * headDim; }
  int64_t vBytes() const { return stages * kTileKeys * headDim * 2; }
  int64_t scaleBytes() const { return stages * kTileKeys * 4; }
  int64_t bytes() const { return kBytes() + vBytes() + scaleBytes(); }
};
} // namespace

namespace {
/// Shared memory of the warpgroup variant, in bytes: the CTA's int8 query
/// rows [rows][d] (wgmma's A operand of QK^T), the ring's K
/// [stages][64][d] int8, V^T [stages][d][64] f16 (e4m3 with pv = e4m3) and
/// key scales [stages][64] f32, then two mbarriers per slot (8 bytes each):
/// "full", on which its bulk copies complete, and "empty", on which every
/// thread arrives once done with the slot's tile. The wgmma B operands are
/// K-major rows kept in the swizzle of their width (see swizzle: 128 bytes
/// for f16 V^T and d = 128 K, 64 for e4m3 V^T and d = 64 K), every slot on a
/// 1024-byte boundary, as wgmma's shared-memory descriptors want; so are the
/// queries, while P comes from registers. (At d = 64 the conversion wants 3+
/// stages, the overlapped loop: the serial loop gave wrong results there on
/// the H200 for every CTA with more than one key tile, not yet understood;
/// docs/PERF.md.)
struct WgLayout {
  int64_t headDim, stages, rows;
  bool e4m3Pv;
  WgLayout(const AttentionShape &shape)
      : headDim(shape.headDim), stages(shape.stages),
        rows(shape.warps * kRowsPerWarp), e4m3Pv(shape.e4m3Pv) {}
  int64_t kSlot() const { return kTileKeys * headDim; }
  int64_t vRowBytes() const { return kTileKeys * (e4m3Pv ? 1 : 2); }
  int64_t vSlot() const { return headDim * vRowBytes(); }
  int64_t q() const { return 0; }
  int64_t k() const { return q() + rows * headDim; }
  int64_t v() const { return k() + stages * kSlot(); }
  int64_t scales() const { return v() + stages * vSlot(); }
  int64_t barriers() const { return scales() + stages * kTileKeys * 4; }
  int64_t bytes() const { return barriers() + 2 * stages * 8; }
};
} // namespace

int64_t mlir::qattn::kernels::mmaSharedBytes(const AttentionShape &shape) {
  if (shape.wgmma)
    return WgLayout(shape).bytes();
  return RingLayout{shape.headDim, shape.stages}.bytes();
}

// Latency is hidden by warpgroups: ask for as many CTAs as shared memory
// holds, up to 16 warps per SM (128 registers a thread). Measured on the H200
// with the queries in shared memory: the e4m3 kernel then spills a few
// registers but B4 N4K causal runs 954 us against 980 at its own 146
// registers (3 CTAs); f16 P.V stays at 3 CTAs, held there by shared memory.
int64_t mlir::qattn::kernels::mmaMinCtasPerSM(const AttentionShape &shape) {
  if (!shape.wgmma)
    return 0;
  // With a producer warpgroup: one CTA, whose register count at entry
  // (65536 / threads) setmaxnreg then redistributes; without a known entry
  // count ptxas ignores setmaxnreg (C7508).
  if (shape.producer)
    return 1;
  int64_t bySharedMemory =
      shape.chip.sharedBytesPerSM /
      (mmaSharedBytes(shape) + shape.chip.sharedBytesReservedPerCta);
  return std::max<int64_t>(1, std::min(16 / shape.warps, bySharedMemory));
}

/// The 16-byte chunk where logical chunk `chunk` of row `row` is kept, for
/// rows of `rowBytes` (64 or a multiple of 128): the eight rows an ldmatrix
/// reads at one logical chunk land in eight distinct 16-byte bank groups.
static Value swizzle(ImplicitLocOpBuilder &b, Value row, Value chunk,
                     int64_t rowBytes) {
  // Two 64-byte rows share a 128-byte line: vary the chunk with row / 2.
  Value phase = rowBytes >= 128 ? rem(b, row, 8) : rem(b, div(b, row, 2), 4);
  return arith::XOrIOp::create(b, chunk, phase);
}

/// Rows `first` and `first + 1` of an x4 ldmatrix result: one mma B
/// fragment of `type`.
static Value fragmentPair(ImplicitLocOpBuilder &b, Value x4, int64_t first,
                          VectorType type) {
  Value frag = zeros(b, type);
  for (int64_t reg = 0; reg < 2; ++reg) {
    Value part = vector::ExtractOp::create(b, x4, ArrayRef<int64_t>{first + reg});
    frag = vector::InsertOp::create(b, part, frag, ArrayRef<int64_t>{reg});
  }
  return frag;
}

/// `lo` and `hi` rounded to e4m3 (saturating), as the bytes of an i16 (`lo`
/// the low byte, first in memory).
static Value toE4m3Pair(ImplicitLocOpBuilder &b, Value lo, Value hi) {
  return inlineAsm(b, b.getI16Type(), {hi, lo},
                   "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;", "=h,f,f",
                   /*pure=*/true);
}

//===----------------------------------------------------------------------===//
// Stage kernel
//===----------------------------------------------------------------------===//

// A stage thread decodes 16 channels of a key (of a run of keys for the
// wgmma kernel): 16-byte vector loads of the group constants and stores of
// the results.
static constexpr int64_t kStageChannels = 16;

/// Keys a wgmma stage thread decodes: those of one 16-byte chunk of a V^T
/// row (8 f16 values, or 16 e4m3 bytes with pv = e4m3), so that V goes out
/// transposed in vector stores without a trip through shared memory.
static int64_t wgmmaStageKeys(const AttentionShape &shape) {
  return shape.e4m3Pv ? 16 : 8;
}

/// Threads of the stage launch: one per 16 channels of a key (of
/// wgmmaStageKeys keys for the wgmma kernel).
static int64_t stageThreadCount(const AttentionShape &shape) {
  int64_t keysPerThread = shape.wgmma ? wgmmaStageKeys(shape) : 1;
  return shape.batch * shape.kvHeads * mmaStagedKeys(shape) / keysPerThread *
         shape.headDim / kStageChannels;
}

std::pair<int64_t, int64_t>
mlir::qattn::kernels::mmaStageLaunch(const AttentionShape &shape) {
  return {llvm::divideCeilSigned(stageThreadCount(shape), kStageThreads),
          kStageThreads};
}

namespace {
/// Decodes 16 consecutive channels [c0, c0 + 16) of key j of one of K and V
/// (a stage-kernel thread's share) to their int8 values, loading everything
/// before anything is stored so that the bytes two codes share load once.
class ChunkDecoder {
public:
  /// `group` is j's stage-2 group and `scale1` its stage-1 scale (when one
  /// scale covers the key's channels) where the caller shares them between
  /// keys; null: the decoder finds them.
  ChunkDecoder(ImplicitLocOpBuilder &b, const KVView &kv, int64_t headDim,
               Value bi, Value hk, Value j, Value c0, Value group = {},
               Value scale1 = {})
      : b(b), kv(kv), bi(bi), hk(hk), j(j), c0(c0), scale1(scale1) {
    auto bytes = VectorType::get({kStageChannels}, b.getI8Type());
    auto vload = [&](Value buffer, ValueRange idx) {
      // Rows of d channels (d a multiple of 16) from 16-byte aligned buffers.
      return vector::LoadOp::create(b, bytes, buffer, idx, /*nontemporal=*/false,
                                    llvm::MaybeAlign(16));
    };
    if (kv.stage2) {
      Value g = group ? group : div(b, j, kv.stage2.getGroup());
      scales = vload(kv.groupScales, {bi, hk, g, c0});
      zeros = vload(kv.zeros, {bi, hk, g, c0});
      std::tie(bits, offset) = headCodes(b, kv.stage2, hk, headDim, std::nullopt);
      if (8 % bits == 0) {
        // 2/4-bit codes of the 16 channels: one vector load (c0 * bits is a
        // multiple of 64 bits, so no code straddles it).
        int64_t n = kStageChannels * bits / 8;
        packed = vector::LoadOp::create(
            b, VectorType::get({n}, b.getI8Type()), kv.data,
            ValueRange{bi, j, add(b, offset, div(b, c0, 8 / bits))},
            /*nontemporal=*/false, llvm::MaybeAlign(n));
      }
    } else {
      codes = vload(kv.data, {bi, hk, j, c0});
    }
  }

  /// Channel c0 + i as its int8 value (i32).
  Value int8At(int64_t i) {
    auto at = [&](Value v, int64_t e = -1) {
      return vector::ExtractOp::create(b, v, ArrayRef<int64_t>{e < 0 ? i : e});
    };
    if (!kv.stage2)
      return arith::ExtSIOp::create(b, b.getI32Type(), at(codes));
    Value code;
    if (packed) {
      // unpackCode's bit positions for channel i of the run, in constants.
      bool lsb = kv.stage2.getOrder() == PackOrder::lsb_first;
      int64_t k = i * bits + (lsb ? 0 : bits - 1);
      Value byte = arith::ExtUIOp::create(b, b.getI32Type(), at(packed, k / 8));
      code = arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, byte, i32Const(b, lsb ? k % 8 : 7 - k % 8)),
          i32Const(b, (1 << bits) - 1));
    } else {
      Value c = add(b, c0, indexConst(b, i));
      code = unpackCode(b, c, bits, kv.stage2.getOrder(), [&](Value byte) {
        Value v = load(b, kv.data, {bi, j, add(b, offset, byte)});
        return arith::ExtUIOp::create(b, b.getI32Type(), v);
      });
    }
    return stage2Decode(b, code, arith::ExtUIOp::create(b, b.getI32Type(), at(scales)),
                        arith::ExtSIOp::create(b, b.getI32Type(), at(zeros)),
                        kv.stage2.getAnchor());
  }

  /// Channel c0 + i dequantized to f32.
  Value valueAt(int64_t i) {
    Value s1 = scale1 ? scale1
                      : stage1ScaleAt(b, kv.scales, kv.stage1, bi, hk, j,
                                      add(b, c0, indexConst(b, i)));
    return arith::MulFOp::create(b, intToF32(b, int8At(i)), s1);
  }

private:
  ImplicitLocOpBuilder &b;
  const KVView &kv;
  Value bi, hk, j, c0, scale1, scales, zeros, codes, offset, packed;
  int64_t bits = 0;
};
} // namespace

/// The stage launch's thread index (a 1-D grid of kStageThreads blocks).
static Value stageThread(ImplicitLocOpBuilder &b) {
  return add(b,
             mul(b, gpu::BlockIdOp::create(b, gpu::Dimension::x), kStageThreads),
             gpu::ThreadIdOp::create(b, gpu::Dimension::x));
}

/// Stores `elems` as one vector at `buffer[idx]`, aligned to `align` bytes.
static void storeVector(ImplicitLocOpBuilder &b, ArrayRef<Value> elems,
                        Value buffer, ValueRange idx, int64_t align = 16) {
  auto type = VectorType::get({int64_t(elems.size())}, elems[0].getType());
  vector::StoreOp::create(b, vector::FromElementsOp::create(b, type, elems),
                          buffer, idx, /*nontemporal=*/false,
                          llvm::MaybeAlign(align));
}

/// The stage key's f32 key scale (0 for a padding key) at kScales[bi, hk, j].
static void storeKeyScale(ImplicitLocOpBuilder &b, const AttentionView &view,
                          const MmaStaged &staged, Value bi, Value hk, Value j,
                          Value jc, Value valid) {
  Value kScale =
      stage1ScaleAt(b, view.k.scales, view.k.stage1, bi, hk, jc, Value());
  store(b, arith::SelectOp::create(b, valid, kScale, f32Const(b, 0.0)),
        staged.kScales, {bi, hk, j});
}

/// The mma.sync kernel's stage: one thread per 16 channels of a key, K and V
/// rows as they are.
static void emitMmaSyncStage(ImplicitLocOpBuilder &b,
                             const AttentionShape &shape,
                             const AttentionView &view,
                             const MmaStaged &staged) {
  int64_t d = shape.headDim, keys = mmaStagedKeys(shape);
  int64_t perRow = d / kStageChannels;
  // The thread count is a multiple of the block (whole 64-key tiles of
  // d >= 64 channels).
  Value e = stageThread(b);
  Value chunk = rem(b, e, perRow);
  Value j = rem(b, div(b, e, perRow), keys);
  Value c0 = mul(b, chunk, kStageChannels);
  Value hk = rem(b, div(b, e, perRow * keys), shape.kvHeads);
  Value bi = div(b, e, perRow * keys * shape.kvHeads);
  Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j,
                                      indexConst(b, shape.cacheKeys));
  // Padding keys decode the last key and store zeros.
  Value jc = minIdx(b, j, indexConst(b, shape.cacheKeys - 1));

  ChunkDecoder k(b, view.k, d, bi, hk, jc, c0), v(b, view.v, d, bi, hk, jc, c0);
  SmallVector<Value> k8, v16;
  for (int64_t i = 0; i < kStageChannels; ++i) {
    k8.push_back(arith::TruncIOp::create(
        b, b.getI8Type(),
        arith::SelectOp::create(b, valid, k.int8At(i), i32Const(b, 0))));
    v16.push_back(fromF32(
        b, arith::SelectOp::create(b, valid, v.valueAt(i), f32Const(b, 0.0)),
        b.getF16Type()));
  }
  storeVector(b, k8, staged.k, {bi, hk, j, c0});
  storeVector(b, v16, staged.v, {bi, hk, j, c0});
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, chunk,
                                      indexConst(b, 0));
  ifThen(b, first,
         [&] { storeKeyScale(b, view, staged, bi, hk, j, jc, valid); });
}

/// The wgmma kernel's stage writes each tile as its ring slot's image (see
/// WgLayout), so that one bulk copy moves it: K rows with their 16-byte
/// chunks swizzled, V^T as [tile][channel][64 keys] with its chunks
/// swizzled. A thread decodes 16 channels of the keys of one V^T chunk
/// (wgmmaStageKeys); the lanes of a warp take consecutive channel chunks
/// first, so each packed row loads whole (64 bytes of 4-bit codes at
/// d = 128), each K store covers a row and each V^T store a 16-byte chunk.
static void emitWgmmaStage(ImplicitLocOpBuilder &b, const AttentionShape &shape,
                           const AttentionView &view, const MmaStaged &staged) {
  int64_t d = shape.headDim, perRow = d / kStageChannels;
  int64_t n = wgmmaStageKeys(shape), runs = mmaStagedKeys(shape) / n;
  Value e = stageThread(b);
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e,
                                        indexConst(b, stageThreadCount(shape)));
  ifThen(b, inRange, [&] {
    Value chunk = rem(b, e, perRow), c0 = mul(b, chunk, kStageChannels);
    Value j0 = mul(b, rem(b, div(b, e, perRow), runs), n);
    Value hk = rem(b, div(b, e, perRow * runs), shape.kvHeads);
    Value bi = div(b, e, perRow * runs * shape.kvHeads);
    Value tile = div(b, j0, kTileKeys), key0 = rem(b, j0, kTileKeys);
    // Padding keys decode the last key and store zeros.
    SmallVector<Value> j, jc, valid;
    for (int64_t k = 0; k < n; ++k) {
      j.push_back(add(b, j0, indexConst(b, k)));
      jc.push_back(minIdx(b, j.back(), indexConst(b, shape.cacheKeys - 1)));
      valid.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                            j.back(),
                                            indexConst(b, shape.cacheKeys)));
    }
    // All loads of a tensor before its stores (which may alias them, as
    // far as LLVM knows); the keys share one stage-2 group and one stage-1
    // scale when groups and blocks are whole runs.
    auto decoders = [&](const KVView &kv, bool values) {
      Value group, scale1;
      if (kv.stage2 && kv.stage2.getGroup() % n == 0)
        group = div(b, jc[0], kv.stage2.getGroup());
      bool perKey =
          values && kv.stage1.getGranularity() != Granularity::channel;
      auto scaleOf = [&](Value key) {
        return stage1ScaleAt(b, kv.scales, kv.stage1, bi, hk, key, Value());
      };
      if (perKey && kv.stage1.getBlock() % n == 0)
        scale1 = scaleOf(jc[0]);
      std::vector<ChunkDecoder> all;
      all.reserve(n);
      for (int64_t k = 0; k < n; ++k)
        all.emplace_back(b, kv, d, bi, hk, jc[k], c0, group,
                         perKey && !scale1 ? scaleOf(jc[k]) : scale1);
      return all;
    };
    auto int8At = [&](ChunkDecoder &dec, int64_t k, int64_t i) {
      return arith::SelectOp::create(b, valid[k], dec.int8At(i),
                                     i32Const(b, 0));
    };

    std::vector<ChunkDecoder> kDec = decoders(view.k, /*values=*/false);
    for (int64_t k = 0; k < n; ++k) {
      SmallVector<Value> k8;
      for (int64_t i = 0; i < kStageChannels; ++i)
        k8.push_back(
            arith::TruncIOp::create(b, b.getI8Type(), int8At(kDec[k], k, i)));
      storeVector(
          b, k8, staged.k,
          {bi, hk, j[k], mul(b, swizzle(b, j[k], chunk, d), kStageChannels)});
    }

    std::vector<ChunkDecoder> vDec = decoders(view.v, /*values=*/!shape.e4m3Pv);
    for (int64_t i = 0; i < kStageChannels; ++i) {
      Value c = add(b, c0, indexConst(b, i));
      SmallVector<Value> row;
      if (shape.e4m3Pv) {
        // The int8 codes as e4m3 (the tile's scale rides on P), in the
        // order of P's bytes: in a wgmma 8-bit A operand lane 4g + t holds
        // columns 4t..4t+3 (and 16 more) of each 32-key k step, while the
        // QK^T accumulators give it keys 8n + 2t, 8n + 2t + 1 of each 8-key
        // n tile. So byte p = 4t + 2a + c' of a 16-key run's chunk holds its
        // key 8a + 2t + c', and V^T's rows follow P. Converted in pairs
        // (c' = 0, 1).
        for (int64_t p = 0; p < 16; p += 2) {
          int64_t key = 8 * ((p / 2) % 2) + 2 * (p / 4);
          row.push_back(
              toE4m3Pair(b, intToF32(b, int8At(vDec[key], key, i)),
                         intToF32(b, int8At(vDec[key + 1], key + 1, i))));
        }
        Value at = mul(b, swizzle(b, c, div(b, key0, 16), 64), 16);
        auto pairs = VectorType::get({8}, b.getI16Type());
        Value bytes = vector::BitCastOp::create(
            b, VectorType::get({16}, b.getI8Type()),
            vector::FromElementsOp::create(b, pairs, row));
        vector::StoreOp::create(b, bytes, staged.v,
                                ValueRange{bi, hk, tile, c, at},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
        continue;
      }
      for (int64_t k = 0; k < n; ++k)
        row.push_back(
            fromF32(b,
                    arith::SelectOp::create(b, valid[k], vDec[k].valueAt(i),
                                            f32Const(b, 0.0)),
                    b.getF16Type()));
      storeVector(
          b, row, staged.v,
          {bi, hk, tile, c, mul(b, swizzle(b, c, div(b, key0, 8), 128), 8)});
    }

    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, chunk,
                                        indexConst(b, 0));
    ifThen(b, first, [&] {
      for (int64_t k = 0; k < n; ++k)
        storeKeyScale(b, view, staged, bi, hk, j[k], jc[k], valid[k]);
    });
  });
}

void mlir::qattn::kernels::emitMmaStage(ImplicitLocOpBuilder &b,
                                        const AttentionShape &shape,
                                        const AttentionView &view,
                                        const MmaStaged &staged) {
  if (shape.wgmma)
    emitWgmmaStage(b, shape, view, staged);
  else
    emitMmaSyncStage(b, shape, view, staged);
}

//===----------------------------------------------------------------------===//
// Attention kernel
//===----------------------------------------------------------------------===//

namespace {
/// Builds one CTA's body. Lane l of a warp: group g = l / 4 (rows g, g + 8
/// of the warp's tile), thread-in-group t = l % 4 (columns).
class MmaEmitter {
public:
  MmaEmitter(ImplicitLocOpBuilder &b, const AttentionShape &shape,
             const AttentionView &view, const MmaStaged &staged, Type outType)
      : b(b), shape(shape), view(view), staged(staged), outType(outType),
        ring{shape.headDim, shape.stages} {}

  void emit(Value out) {
    MLIRContext *ctx = b.getContext();
    int64_t d = shape.headDim, rowsPerCta = shape.warps * kRowsPerWarp;
    auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Value dyn = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr, wg));
    auto view1d = [&](int64_t at, int64_t n, Type type) {
      return memref::ViewOp::create(b, MemRefType::get({n}, type, nullptr, wg),
                                    dyn, indexConst(b, at), ValueRange{});
    };
    if (shape.wgmma) {
      WgLayout wl(shape);
      qRows = view1d(wl.q(), rowsPerCta * d, b.getI8Type());
      kRing = view1d(wl.k(), shape.stages * wl.kSlot(), b.getI8Type());
      vRing = shape.e4m3Pv
                  ? view1d(wl.v(), shape.stages * wl.vSlot(), b.getI8Type())
                  : view1d(wl.v(), shape.stages * wl.vSlot() / 2, b.getF16Type());
      sRing = view1d(wl.scales(), shape.stages * kTileKeys, b.getF32Type());
      barriers = view1d(wl.barriers(), 2 * shape.stages, b.getI64Type());
    } else {
      kRing = view1d(0, ring.kBytes(), b.getI8Type());
      vRing = view1d(ring.kBytes(), ring.vBytes() / 2, b.getF16Type());
      sRing = view1d(ring.kBytes() + ring.vBytes(), ring.scaleBytes() / 4,
                     b.getF32Type());
    }

    tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value lane = rem(b, tid, kThreadsPerWarp);
    group = div(b, lane, 4);
    inGroup = rem(b, lane, 4);
    Value warp = div(b, tid, kThreadsPerWarp);
    // The producer's warps (the first warpgroup) take the rows of the first
    // others' (they compute nothing with them).
    if (shape.producer)
      warp = maxIdx(
          b, arith::SubIOp::create(b, warp, indexConst(b, kWarpsPerWarpgroup)),
          indexConst(b, 0));
    Value bh = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    h = rem(b, bh, shape.qHeads);
    bi = div(b, bh, shape.qHeads);
    hk = div(b, h, shape.groupSize());
    Value tileIdx = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    if (shape.causal) {
      // Causal rows near the end see the most keys: run those CTAs first.
      Value last = indexConst(b, mmaGrid(shape).first - 1);
      tileIdx = arith::SubIOp::create(b, last, tileIdx);
    }
    Value ctaRow = mul(b, tileIdx, rowsPerCta);
    Value row0 = add(b, add(b, ctaRow, mul(b, warp, kRowsPerWarp)), group);
    rows = {row0, add(b, row0, indexConst(b, 8))};
    // Rows past the end compute on the last query and are never stored.
    for (Value r : rows)
      clampedRows.push_back(minIdx(b, r, indexConst(b, shape.queries - 1)));
    loadRowFactors();
    if (shape.wgmma) {
      storeQueries(ctaRow);
      // The warpgroup's 64 rows.
      qDesc = advance(descriptor(qRows, d), mul(b, div(b, warp, 4), 64 * d));
      kDesc = descriptor(kRing, d);
      vDesc = descriptor(vRing, WgLayout(shape).vRowBytes());
    } else {
      loadQueryFragments();
      laneOffsets(lane);
    }

    // Keys a CTA row can see; tiles below `fullTiles` have no masked key for
    // any of them. Causal row r sees keys <= r + (keys - queries).
    int64_t offset = shape.cacheKeys - shape.queries;
    Value keyEnd = indexConst(b, shape.cacheKeys);
    Value fullTiles = indexConst(b, shape.cacheKeys / kTileKeys);
    if (shape.causal) {
      Value lastRow = minIdx(b, add(b, ctaRow, indexConst(b, rowsPerCta - 1)),
                             indexConst(b, shape.queries - 1));
      keyEnd = minIdx(b, keyEnd, add(b, lastRow, indexConst(b, offset + 1)));
      Value firstSeen = arith::MaxSIOp::create(
          b, add(b, ctaRow, indexConst(b, offset + 1)), indexConst(b, 0));
      fullTiles = minIdx(b, fullTiles, div(b, firstSeen, kTileKeys));
    }
    Value tiles = div(b, add(b, keyEnd, indexConst(b, kTileKeys - 1)), kTileKeys);
    // Everything above overlaps the stage launch's tail; the tiles below
    // are its output.
    waitForEarlierLaunches(b);

    SmallVector<Value> init = {f32Const(b, -INFINITY), f32Const(b, -INFINITY),
                               f32Const(b, 0.0), f32Const(b, 0.0)};
    Value zeroAcc = zeros(b, VectorType::get({2, 2}, b.getF32Type()));
    for (int64_t u = 0; u < d / 8; ++u)
      init.push_back(zeroAcc);

    if (shape.wgmma) {
      wgmmaLoop(out, tiles, fullTiles, init);
      return;
    }
    int64_t depth = shape.stages;
    for (int64_t p = 0; p + 1 < depth; ++p) {
      copyTileIf(indexConst(b, p), indexConst(b, p), tiles);
      NVVM::CpAsyncCommitGroupOp::create(b);
    }
    SmallVector<Value> st = reduceRange(
        b, indexConst(b, 0), tiles, init, [&](Value it, ValueRange state) {
          if (depth == 1) {
            // Every warp is done with the slot before it is refilled.
            gpu::BarrierOp::create(b);
            copyTileIf(it, indexConst(b, 0), tiles);
            NVVM::CpAsyncCommitGroupOp::create(b);
            NVVM::CpAsyncWaitGroupOp::create(b, 0);
          } else {
            // This thread's copies of tile `it` have landed ...
            NVVM::CpAsyncWaitGroupOp::create(b, depth - 2);
          }
          // ... and everyone's have; also, every warp is done with the slot
          // that tile it-1 used, which the copies below refill.
          gpu::BarrierOp::create(b);
          if (depth > 1) {
            Value ahead = add(b, it, indexConst(b, depth - 1));
            copyTileIf(ahead, rem(b, ahead, depth), tiles);
            NVVM::CpAsyncCommitGroupOp::create(b);
          }
          Value masked = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, it,
                                               fullTiles);
          return processTile(mul(b, it, kTileKeys), rem(b, it, depth), masked,
                             state);
        });
    NVVM::CpAsyncWaitGroupOp::create(b, 0);
    storeOutput(out, st);
  }

private:
  /// The wgmma kernel's tile loop. Thread 0 moves each staged tile into its
  /// ring slot with bulk copies (the stage launch wrote it as the slot's
  /// image) that complete on the slot's full barrier, which every thread
  /// waits on; every thread arrives on the slot's empty barrier after its
  /// last wgmma reading the slot, and thread 0 refills the slot once all
  /// have. No CTA barrier in the loop; all `stages` slots are in flight.
  ///
  /// With one warpgroup and 3 or more stages the loop overlaps products
  /// with the softmax (overlappedTiles).
  ///
  /// With a producer warpgroup (the CTA's first four warps), its thread 0
  /// does the refills alone, waiting on the empty barriers, and the
  /// warpgroup hands its registers to the others (setmaxnreg: 24 each, the
  /// others 240), which run the overlapped loop on them.
  void wgmmaLoop(Value out, Value tiles, Value fullTiles,
                 SmallVector<Value> init) {
    int64_t depth = shape.stages;
    Value leader = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid,
                                         indexConst(b, 0));
    ifThen(b, leader, [&] {
      for (int64_t slot = 0; slot < depth; ++slot) {
        Value at = indexConst(b, slot);
        initBarrier(barrierAddress(at, /*empty=*/false), 1);
        initBarrier(barrierAddress(at, /*empty=*/true),
                    shape.warps * kThreadsPerWarp);
      }
      // The initialized barriers, visible to the bulk copies' completion.
      inlineAsm(b, Type(), {},
                "fence.mbarrier_init.release.cluster;\n"
                "fence.proxy.async.shared::cta;",
                "~{memory}");
      for (int64_t p = 0; p < depth; ++p)
        ifThen(b,
               arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                     indexConst(b, p), tiles),
               [&] { loadTile(indexConst(b, p)); });
    });
    gpu::BarrierOp::create(b);
    // Once every thread is done with tile it's slot, tile it + stages
    // (which exists) goes there.
    auto refill = [&](Value it) {
      waitBarrier(barrierAddress(rem(b, it, depth), /*empty=*/true),
                  phaseOf(it));
      loadTile(add(b, it, indexConst(b, depth)));
    };
    // This thread is done with tile it's slot; thread 0 refills it (the
    // producer's does that on its own).
    auto release = [&](Value it) {
      Value empty = barrierAddress(rem(b, it, depth), /*empty=*/true);
      inlineAsm(b, Type(), {empty},
                "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}");
      if (shape.producer)
        return;
      Value ahead = add(b, it, indexConst(b, depth));
      Value refills = arith::AndIOp::create(
          b, leader,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, ahead, tiles));
      ifThen(b, refills, [&] { refill(it); });
    };
    if (!shape.producer) {
      storeOutput(out, consumeTiles(tiles, fullTiles, init, release));
      return;
    }
    Value producer = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ult, tid,
        indexConst(b, kWarpsPerWarpgroup * kThreadsPerWarp));
    auto ifOp = scf::IfOp::create(b, producer, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, kProducerRegisters,
                                   NVVM::SetMaxRegisterAction::decrease);
    ifThen(b, leader, [&] {
      forRange(b, indexConst(b, depth), tiles, [&](Value ahead) {
        refill(arith::SubIOp::create(b, ahead, indexConst(b, depth)));
      });
    });
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, kConsumerRegisters,
                                   NVVM::SetMaxRegisterAction::increase);
    storeOutput(out, consumeTiles(tiles, fullTiles, init, release));
  }

  /// The tile loop of the threads that compute (see wgmmaLoop); `release`
  /// says a tile's slot is free. Returns the final state.
  SmallVector<Value> consumeTiles(Value tiles, Value fullTiles,
                                  SmallVector<Value> init,
                                  function_ref<void(Value)> release) {
    if (overlapsTiles(shape))
      return overlappedTiles(tiles, fullTiles, init, release);
    int64_t depth = shape.stages;
    return reduceRange(
        b, indexConst(b, 0), tiles, init, [&](Value it, ValueRange state) {
          waitTile(it);
          Value masked = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, it,
                                               fullTiles);
          SmallVector<Value> next = processTile(
              mul(b, it, kTileKeys), rem(b, it, depth), masked, state);
          release(it);
          return next;
        });
  }

  /// The overlapped tile loop, in FlashAttention-3's order: tile it + 1's
  /// QK^T and tile it's P.V go out together, and tile it + 1's softmax runs
  /// while P.V is in flight (its rescaling of the accumulators waits for
  /// it). The loop carries tile it's P as P.V's A registers (16 or 8) and
  /// waits for both products within the iteration: results of a wgmma in
  /// flight carried across the back edge are copied by register moves,
  /// which make ptxas serialize every wgmma (C7514). The last tile's P.V is
  /// peeled off. On the H200 this order beat the earlier one (tile it + 1's
  /// QK^T in flight during tile it's softmax, the loop carrying its int32
  /// dot products): B16 H16 N1K d64 196.1 -> 186.1 us, and it needs fewer
  /// registers (151 against 199 at d = 128, one warpgroup, 3 stages).
  SmallVector<Value> overlappedTiles(Value tiles, Value fullTiles,
                                     SmallVector<Value> init,
                                     function_ref<void(Value)> release) {
    int64_t depth = shape.stages;
    size_t ns = init.size();
    // Tile `tile`'s softmax from its dot products: the state after it
    // (accumulators as in `state`), its corrections and P's A registers.
    auto softmaxOf = [&](SmallVector<Value> dots, Value tile, ValueRange state,
                         SmallVector<Value> &corr) {
      Value tileScale;
      SmallVector<SmallVector<Value>> sc =
          scoresOf(dotTiles(dots), rem(b, tile, depth), tileScale);
      Value masked =
          arith::CmpIOp::create(b, arith::CmpIPredicate::uge, tile, fullTiles);
      SmallVector<Value> next = softmaxTile(
          sc, tileScale, mul(b, tile, kTileKeys), masked, state, corr,
          /*voteFirst=*/false);
      llvm::append_range(next, pOperands(sc));
      return next;
    };
    Value zero = indexConst(b, 0), one = indexConst(b, 1);
    waitTile(zero);
    SmallVector<Value> dots = issueDots(zero);
    commitWgmma();
    waitWgmma({&dots});
    // The accumulators are zero: tile 0's corrections change nothing.
    SmallVector<Value> corr;
    SmallVector<Value> first = softmaxOf(dots, zero, init, corr);

    Value last = arith::SubIOp::create(b, tiles, one);
    SmallVector<Value> out =
        reduceRange(b, zero, last, first, [&](Value it, ValueRange carried) {
          SmallVector<Value> state(carried.take_front(ns));
          SmallVector<Value> p(carried.drop_front(ns));
          Value ahead = add(b, it, one);
          waitTile(ahead);
          SmallVector<Value> nextDots = issueDots(rem(b, ahead, depth));
          commitWgmma();
          SmallVector<Value> acc = issuePV(p, rem(b, it, depth), state);
          commitWgmma();
          waitWgmma({&nextDots}, /*inFlight=*/1);
          SmallVector<Value> corr;
          SmallVector<Value> next = softmaxOf(nextDots, ahead, state, corr);
          waitWgmma({&acc});
          release(it);
          setAccumulators(acc, next);
          rescale(state, corr, next);
          return next;
        });
    SmallVector<Value> st(out.begin(), out.begin() + ns);
    SmallVector<Value> acc =
        issuePV(ArrayRef<Value>(out).drop_front(ns), rem(b, last, depth), st);
    commitWgmma();
    waitWgmma({&acc});
    release(last);
    setAccumulators(acc, st);
    return st;
  }

  Value sharedAddress(Value m, Value at) {
    return byteAddress(b, m, at, b.getI32Type());
  }
  /// A slot's full or empty barrier.
  Value barrierAddress(Value slot, bool empty) {
    if (empty)
      slot = add(b, slot, indexConst(b, shape.stages));
    return sharedAddress(barriers, mul(b, slot, 8));
  }
  void initBarrier(Value at, int64_t count) {
    inlineAsm(b, Type(), {at},
              "mbarrier.init.shared::cta.b64 [$0], " + std::to_string(count) + ";",
              "r");
  }
  /// The parity of the barrier phase that tile `tile` completes: a slot's
  /// barriers complete once per tile it holds.
  Value phaseOf(Value tile) {
    return arith::IndexCastUIOp::create(b, b.getI32Type(),
                                        rem(b, div(b, tile, shape.stages), 2));
  }
  /// Waits until the barrier at `at` has completed the phase of `parity`.
  void waitBarrier(Value at, Value parity) {
    inlineAsm(b, Type(), {at, parity},
              "{\n.reg .pred done;\nLAB_WAIT:\n"
              "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
              "@!done bra LAB_WAIT;\n}",
              "r,r,~{memory}");
  }
  Value globalAddress(Value m, Value at) {
    return byteAddress(b, m, at, b.getI64Type());
  }

  /// Starts the bulk copies of staged tile `tile` (K rows, V^T, key scales:
  /// each contiguous) into its ring slot; they complete on the slot's
  /// barrier, which expects their bytes.
  void loadTile(Value tile) {
    int64_t d = shape.headDim, keys = mmaStagedKeys(shape);
    WgLayout wl(shape);
    Value slot = rem(b, tile, shape.stages);
    Value head = add(b, mul(b, bi, shape.kvHeads), hk);
    Value key = add(b, mul(b, head, keys), mul(b, tile, kTileKeys));
    int64_t kBytes = wl.kSlot(), vBytes = wl.vSlot(), sBytes = kTileKeys * 4;
    SmallVector<Value> operands = {
        sharedAddress(kRing, mul(b, slot, kBytes)),
        globalAddress(staged.k, mul(b, key, d)),
        sharedAddress(vRing, mul(b, slot, vBytes)),
        globalAddress(staged.v, mul(b, key, wl.vSlot() / kTileKeys)),
        sharedAddress(sRing, mul(b, slot, sBytes)),
        globalAddress(staged.kScales, mul(b, key, 4)),
        barrierAddress(slot, /*empty=*/false)};
    std::string ptx =
        "{\n.reg .u64 g;\nmbarrier.arrive.expect_tx.shared::cta.b64 _, [$6], " +
        std::to_string(kBytes + vBytes + sBytes) + ";\n";
    int64_t sizes[] = {kBytes, vBytes, sBytes};
    for (auto [i, bytes] : llvm::enumerate(sizes))
      ptx += "cvta.to.global.u64 g, $" + std::to_string(2 * i + 1) +
             ";\ncp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
             "bytes [$" +
             std::to_string(2 * i) + "], [g], " + std::to_string(bytes) +
             ", [$6];\n";
    inlineAsm(b, Type(), operands, ptx + "}", "r,l,r,l,r,l,r,~{memory}");
  }

  /// Waits until staged tile `tile` is in its ring slot.
  void waitTile(Value tile) {
    waitBarrier(barrierAddress(rem(b, tile, shape.stages), /*empty=*/false),
                phaseOf(tile));
  }

  /// The lane's ldmatrix offsets that do not depend on the tile: K rows for
  /// each 64-channel half, V rows for each of the four chunk pairs modulo 8
  /// chunks (the swizzle only touches a chunk's low three bits).
  void laneOffsets(Value lane) {
    int64_t d = shape.headDim;
    Value m = div(b, lane, 8), r = rem(b, lane, 8);
    // K: matrix m of an x4 load is the 16-channel chunk 4 half + m of keys
    // 8n + r.
    for (int64_t half = 0; half < d / 64; ++half) {
      Value chunk = swizzle(b, r, add(b, m, indexConst(b, 4 * half)), d);
      kLane.push_back(add(b, mul(b, r, d), mul(b, chunk, kChunkBytes)));
    }
    // V (transposed): matrix m is keys 8 (m % 2) + r of the 16-key step and
    // the 8-channel chunk 2 pair + m / 2.
    Value key = add(b, mul(b, rem(b, m, 2), 8), r);
    for (int64_t pair = 0; pair < std::min<int64_t>(4, d / 16); ++pair) {
      Value chunk = swizzle(b, key, add(b, div(b, m, 2), indexConst(b, 2 * pair)),
                            2 * d);
      vLane.push_back(add(b, mul(b, key, d), mul(b, chunk, 8)));
    }
  }

  /// A fragments of the int8 queries, one per 32 channels.
  void loadQueryFragments() {
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
  }

  /// Copies the CTA's query rows (from `ctaRow`; rows past the end repeat
  /// the last) into shared memory, K-major in the 128- or 64-byte swizzle of
  /// their width like the K tiles, 16 bytes per thread and step, and makes
  /// them visible to wgmma (the async proxy); the CTA barrier before the
  /// tile loop orders them before the first QK^T.
  void storeQueries(Value ctaRow) {
    int64_t d = shape.headDim, perRow = d / kChunkBytes;
    auto chunkType = VectorType::get({kChunkBytes}, b.getI8Type());
    spreadOver(b, tid, shape.threads(), shape.warps * kRowsPerWarp * perRow,
               [&](Value c) {
                 Value row = div(b, c, perRow), chunk = rem(b, c, perRow);
                 Value q = minIdx(b, add(b, ctaRow, row),
                                  indexConst(b, shape.queries - 1));
                 Value v = vector::LoadOp::create(
                     b, chunkType, view.q,
                     ValueRange{bi, h, q, mul(b, chunk, kChunkBytes)},
                     /*nontemporal=*/false, llvm::MaybeAlign(16));
                 Value at = add(b, mul(b, row, d),
                                mul(b, swizzle(b, row, chunk, d), kChunkBytes));
                 vector::StoreOp::create(b, v, qRows, ValueRange{at});
               });
    inlineAsm(b, Type(), {}, "fence.proxy.async.shared::cta;", "~{memory}");
  }

  /// The per-row factor s1_q * scale * log2(e) that turns int32 dot products
  /// times the key scale into base-2 logits.
  void loadRowFactors() {
    Value scale = f32Const(b, shape.scale * M_LOG2E);
    for (Value row : clampedRows) {
      Value s1 = stage1ScaleAt(b, view.qScales, view.qStage1, bi, h, row, Value());
      rowFactor.push_back(arith::MulFOp::create(b, s1, scale));
    }
  }

  /// cp.async copies of staged tile `tile` into ring slot `slot`, when the
  /// tile exists (the commit that follows is unconditional, so that group
  /// counts stay in step).
  void copyTileIf(Value tile, Value slot, Value tiles) {
    Value exists = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tile, tiles);
    auto ifOp = scf::IfOp::create(b, exists, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    int64_t d = shape.headDim;
    Value first = mul(b, tile, kTileKeys);
    auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
    auto spread = [&](int64_t chunks, function_ref<void(Value)> issue) {
      spreadOver(b, tid, shape.threads(), chunks, issue);
    };
    // Read by every query CTA of the head: keep in L1 (cp.async.ca).
    auto copy = [&](Value dst, Value dstIdx, Value src, ValueRange srcIdx,
                    int64_t elements) {
      nvgpu::DeviceAsyncCopyOp::create(b, tokenType, dst, ValueRange{dstIdx},
                                       src, srcIdx, b.getIndexAttr(elements),
                                       Value(), UnitAttr());
    };
    int64_t kPerRow = d / 16, vPerRow = d / 8;
    spread(kTileKeys * kPerRow, [&](Value c) {
      Value key = div(b, c, kPerRow), chunk = rem(b, c, kPerRow);
      Value dst = add(b, mul(b, slot, kTileKeys * d),
                      add(b, mul(b, key, d),
                          mul(b, swizzle(b, key, chunk, d), kChunkBytes)));
      copy(kRing, dst, staged.k, {bi, hk, add(b, first, key), mul(b, chunk, 16)},
           16);
    });
    spread(kTileKeys * vPerRow, [&](Value c) {
      Value key = div(b, c, vPerRow), chunk = rem(b, c, vPerRow);
      Value dst = add(b, mul(b, slot, kTileKeys * d),
                      add(b, mul(b, key, d),
                          mul(b, swizzle(b, key, chunk, 2 * d), 8)));
      copy(vRing, dst, staged.v, {bi, hk, add(b, first, key), mul(b, chunk, 8)},
           8);
    });
    spread(kTileKeys / 4, [&](Value c) {
      copy(sRing, add(b, mul(b, slot, kTileKeys), mul(b, c, 4)), staged.kScales,
           {bi, hk, add(b, first, mul(b, c, 4))}, 4);
    });
  }

  /// Scores of the warp's 16 rows against the tile in `slot`: 8 n8 tiles of
  /// (row g / g+8) x (keys 8n + 2t, 8n + 2t + 1). With one key scale per
  /// tile they are the int32 dot products read as the f32 bit patterns of
  /// kDotBias + dot (the conversion then costs an integer add instead of an
  /// I2F on the quarter-rate pipe), and `tileScale` is the tile's key scale;
  /// else they are dot * key scale as f32 and `tileScale` is null.
  SmallVector<SmallVector<Value>> scores(Value slot, Value &tileScale) {
    int64_t d = shape.headDim;
    auto cType = VectorType::get({2, 2}, b.getI32Type());
    auto bFrag = VectorType::get({2, 4}, b.getI8Type());
    auto x4 = VectorType::get({4, 4}, b.getI8Type());
    Value kBase = mul(b, slot, kTileKeys * d);
    SmallVector<Value> dots;
    if (shape.wgmma) {
      dots = wgmmaDots(slot);
    } else {
      for (int64_t nt = 0; nt < kTileKeys / 8; ++nt) {
        Value acc = zeros(b, cType);
        for (int64_t half = 0; half < d / 64; ++half) {
          Value at = add(b, kBase, add(b, kLane[half], indexConst(b, nt * 8 * d)));
          Value m = nvgpu::LdMatrixOp::create(b, x4, kRing, ValueRange{at},
                                              /*transpose=*/false, /*numTiles=*/4);
          for (int64_t kk = 0; kk < 2; ++kk)
            acc = nvgpu::MmaSyncOp::create(b, qFrags[2 * half + kk],
                                           fragmentPair(b, m, 2 * kk, bFrag), acc,
                                           ArrayRef<int64_t>{16, 8, 32});
        }
        dots.push_back(acc);
      }
    }
    return scoresOf(dots, slot, tileScale);
  }

  /// The scores of int32 dot products `dots` (per 8-key tile) of the tile
  /// in `slot`; see scores.
  SmallVector<SmallVector<Value>> scoresOf(ArrayRef<Value> dots, Value slot,
                                           Value &tileScale) {
    auto pairType = VectorType::get({2}, b.getF32Type());
    Value sBase = add(b, mul(b, slot, kTileKeys), mul(b, inGroup, 2));
    SmallVector<SmallVector<Value>> s;
    for (int64_t nt = 0; nt < kTileKeys / 8; ++nt) {
      Value acc = dots[nt];
      Value ks;
      if (!tileScales())
        ks = vector::LoadOp::create(
            b, pairType, sRing, ValueRange{add(b, sBase, indexConst(b, nt * 8))});
      SmallVector<Value> &tile = s.emplace_back();
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t ci = 0; ci < 2; ++ci) {
          Value dot = vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{r, ci});
          Value biased = arith::BitcastOp::create(
              b, b.getF32Type(),
              arith::AddIOp::create(b, dot, i32Const(b, kDotBiasBits)));
          if (tileScales()) {
            tile.push_back(biased);
            continue;
          }
          Value exact = arith::SubFOp::create(b, biased, f32Const(b, kDotBias));
          Value kScale = vector::ExtractOp::create(b, ks, ArrayRef<int64_t>{ci});
          tile.push_back(arith::MulFOp::create(b, exact, kScale));
        }
    }
    tileScale = Value();
    if (tileScales())
      tileScale = load(b, sRing, {mul(b, slot, kTileKeys)});
    return s;
  }

  //===------------------------------------------------------------------===//
  // The warpgroup variant: wgmma from shared memory
  //===------------------------------------------------------------------===//

  /// The wgmma shared-memory descriptor of a K-major operand at `tile` (a
  /// 1024-byte aligned array of `rowBytes`-byte rows, 64 or 128, in the
  /// swizzle of that width): start address >> 4 in bits 0-13, leading byte
  /// offset 1 (unused with a swizzle), stride byte offset (from one 8-row
  /// group to the next) >> 4 in bits 32-45, swizzle mode (1: 128 bytes, 2:
  /// 64) in bits 62-63.
  Value descriptor(Value tile, int64_t rowBytes) {
    auto i64 = b.getI64Type();
    Value addr = arith::IndexCastUIOp::create(
        b, i64, memref::ExtractAlignedPointerAsIndexOp::create(b, tile));
    Value start = arith::ShRUIOp::create(
        b, arith::AndIOp::create(b, addr, i64Const(0x3FFFF)), i64Const(4));
    int64_t mode = rowBytes == 128 ? 1 : 2;
    int64_t fixed = (int64_t(1) << 16) | (int64_t(8 * rowBytes >> 4) << 32) |
                    (mode << 62);
    return arith::OrIOp::create(b, start, i64Const(fixed));
  }
  Value i64Const(int64_t v) {
    return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
  }
  /// `desc` moved on by `bytes` (a multiple of 16; the field cannot carry
  /// out, shared memory being below 256 KiB).
  Value advance(Value desc, Value bytes) {
    Value units = arith::IndexCastUIOp::create(b, b.getI64Type(), div(b, bytes, 16));
    return arith::AddIOp::create(b, desc, units);
  }

  /// Constraints of an inline asm whose first `n` operands are registers of
  /// class `letter` ('r' or 'f') written and tied to its first `n` inputs.
  static std::string tiedConstraints(int64_t n, char letter) {
    std::string c;
    for (int64_t i = 0; i < n; ++i)
      c += std::string(i ? "," : "") + "=" + letter;
    for (int64_t i = 0; i < n; ++i)
      c += "," + std::to_string(i);
    return c;
  }
  static char registerClass(Type t) { return t.isF32() ? 'f' : 'r'; }
  /// The struct of `n` values of `elem` that an inline asm returns.
  Type registerStruct(int64_t n, Type elem) {
    return LLVM::LLVMStructType::getLiteral(b.getContext(),
                                            SmallVector<Type>(n, elem));
  }
  /// Replaces `regs` with the members of `asmResult`.
  void unpack(SmallVectorImpl<Value> &regs, Value asmResult) {
    for (int64_t i = 0, e = regs.size(); i < e; ++i)
      regs[i] = LLVM::ExtractValueOp::create(b, asmResult, i);
  }

  /// Passes `regs` (a thread's accumulators) through an empty volatile asm
  /// that reads and writes each: a use after wgmma.wait_group then cannot be
  /// scheduled above it (LLVM sees the asynchronous results as ready when
  /// the wgmma is issued).
  void pin(SmallVectorImpl<Value> &regs) {
    Type elem = regs.front().getType();
    unpack(regs, inlineAsm(b, registerStruct(regs.size(), elem), regs, "",
                           tiedConstraints(regs.size(), registerClass(elem))));
  }

  /// Issues the warpgroup's wgmma m64{n}{k} with A from registers (`a`:
  /// four 32-bit registers in the layout of mma.sync's A fragment of the
  /// warp's 16 rows) or from shared memory (`a`: one descriptor, K-major)
  /// and B K-major in shared memory at `descB`, on the
  /// accumulators `regs` (replaced by the results; zero-initialized when
  /// !accumulate). `types` is ".s32.s8.s8", ".f32.f16.f16" or
  /// ".f32.e4m3.e4m3". MLIR's NVVM
  /// dialect has no register-A wgmma, so this is inline PTX. With `fence`
  /// the asm starts with wgmma.fence: register writes that LLVM places
  /// before the asm (the zeroed accumulators, the A fragments) then precede
  /// the fence, as PTX requires (a separate fence op does not keep them
  /// above it).
  void wgmma(SmallVectorImpl<Value> &regs, ArrayRef<Value> a, Value descB,
             int64_t n, int64_t k, StringRef types, bool accumulate,
             bool fence) {
    int64_t r = regs.size(), na = a.size();
    Type elem = regs.front().getType();
    // $0..$(r-1): the accumulators (tied to inputs r..2r-1), then A, the
    // descriptor and scale-d.
    std::string ptx =
        std::string(fence ? "wgmma.fence.sync.aligned;\n" : "") +
        "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(2 * r + na + 1) +
        ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" +
        std::to_string(k) + types.str() + " {";
    for (int64_t i = 0; i < r; ++i)
      ptx += (i ? ", $" : "$") + std::to_string(i);
    ptx += na == 1 ? "}, " : "}, {";
    for (int64_t i = 0; i < na; ++i)
      ptx += (i ? ", $" : "$") + std::to_string(2 * r + i);
    ptx += std::string(na == 1 ? "" : "}") + ", $" +
           std::to_string(2 * r + na) + ", p";
    // Floating-point: scale-a, scale-b; f16 also B K-major (not transposed).
    if (elem.isF32())
      ptx += types.ends_with(".f16") ? ", 1, 1, 0" : ", 1, 1";
    ptx += ";\n}";
    SmallVector<Value> operands(regs.begin(), regs.end());
    llvm::append_range(operands, a);
    operands.push_back(descB);
    operands.push_back(i32Const(b, accumulate ? 1 : 0));
    unpack(regs, inlineAsm(b, registerStruct(r, elem), operands, ptx,
                           tiedConstraints(r, registerClass(elem)) +
                               (na == 1 ? ",l" : ",r,r,r,r") + ",l,r"));
  }

  /// Commits the warpgroup's wgmmas issued since the last commit as a group.
  void commitWgmma() { NVVM::WgmmaGroupSyncAlignedOp::create(b); }
  /// Waits for the warpgroup's wgmma groups but the last `inFlight`
  /// committed, then pins the results `regs` of each group waited for (see
  /// pin).
  void waitWgmma(ArrayRef<SmallVectorImpl<Value> *> results,
                 int64_t inFlight = 0) {
    NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(inFlight));
    for (SmallVectorImpl<Value> *regs : results)
      pin(*regs);
  }

  /// QK^T of the warpgroup's 64 rows against the tile in `slot`: d / 32
  /// wgmma m64n64k32 (s8, s32) with the queries and the K tile from shared
  /// memory, each 32 bytes further into the swizzled rows. The accumulators
  /// come out as mma.sync's C fragments of the warp's 16 rows (register 4 nt +
  /// 2 r + ci: row g + 8 r, key 8 nt + 2 t + ci); returns them per 8-key tile
  /// as vector<2x2xi32>.
  SmallVector<Value> wgmmaDots(Value slot) {
    SmallVector<Value> regs = issueDots(slot);
    commitWgmma();
    waitWgmma({&regs});
    return dotTiles(regs);
  }
  /// Issues (does not commit) the QK^T wgmmas of the tile in `slot`; returns
  /// their accumulators, valid once waited for.
  SmallVector<Value> issueDots(Value slot) {
    int64_t d = shape.headDim;
    SmallVector<Value> regs(kTileKeys / 2, i32Const(b, 0));
    Value kTile = advance(kDesc, mul(b, slot, kTileKeys * d));
    for (int64_t kk = 0; kk < d / 32; ++kk)
      wgmma(regs, advance(qDesc, indexConst(b, 32 * kk)),
            advance(kTile, indexConst(b, 32 * kk)), kTileKeys, 32, ".s32.s8.s8",
            kk > 0, kk == 0);
    return regs;
  }
  /// QK^T accumulators as vector<2x2xi32> per 8-key tile.
  SmallVector<Value> dotTiles(ArrayRef<Value> regs) {
    SmallVector<Value> dots;
    auto cType = VectorType::get({2, 2}, b.getI32Type());
    for (int64_t nt = 0; nt < kTileKeys / 8; ++nt)
      dots.push_back(vector::FromElementsOp::create(
          b, cType, ArrayRef<Value>(regs).slice(4 * nt, 4)));
    return dots;
  }

  /// O += P V: per 16-key step, P's score fragments of 8-key tiles 2 kk and
  /// 2 kk + 1 as f16 pairs are the register A operand of a wgmma
  /// m64n{d}k16 (f16, f32) whose B is the tile's V^T in shared memory.
  void wgmmaPV(ArrayRef<SmallVector<Value>> p, Value slot,
               SmallVector<Value> &next) {
    SmallVector<Value> regs = issuePV(pOperands(p), slot, next);
    commitWgmma();
    waitWgmma({&regs});
    setAccumulators(regs, next);
  }
  /// next[4..] = the P.V accumulator registers `regs`.
  void setAccumulators(ArrayRef<Value> regs, SmallVector<Value> &next) {
    auto cType = VectorType::get({2, 2}, b.getF32Type());
    for (int64_t u = 0; u < shape.headDim / 8; ++u)
      next[4 + u] = vector::FromElementsOp::create(b, cType, regs.slice(4 * u, 4));
  }
  /// P (per 8-key tile, as softmaxTile leaves it) as the register A
  /// operands of P.V: per k step, four 32-bit registers.
  SmallVector<Value> pOperands(ArrayRef<SmallVector<Value>> p) {
    // Two 16-bit halves (`lo` first in memory) as one 32-bit A register.
    auto word = [&](Value lo, Value hi) -> Value {
      Value v = vector::FromElementsOp::create(
          b, VectorType::get({2}, lo.getType()), ValueRange{lo, hi});
      return vector::ExtractOp::create(
          b, vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), v),
          ArrayRef<int64_t>{0});
    };
    SmallVector<Value> a;
    if (shape.e4m3Pv) {
      // k steps of 32 keys: the lane's four bytes of each A register are P
      // of keys 2t, 2t + 1 of two n tiles (see the stage kernel), rows g
      // and g + 8.
      for (int64_t kk = 0; kk < kTileKeys / 32; ++kk)
        for (int64_t half = 0; half < 2; ++half)
          for (int64_t r = 0; r < 2; ++r) {
            ArrayRef<Value> lo = p[4 * kk + 2 * half], hi = p[4 * kk + 2 * half + 1];
            a.push_back(word(toE4m3Pair(b, lo[2 * r], lo[2 * r + 1]),
                             toE4m3Pair(b, hi[2 * r], hi[2 * r + 1])));
          }
      return a;
    }
    for (int64_t kk = 0; kk < kTileKeys / 16; ++kk)
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t r = 0; r < 2; ++r)
          a.push_back(
              word(fromF32(b, p[2 * kk + half][2 * r], b.getF16Type()),
                   fromF32(b, p[2 * kk + half][2 * r + 1], b.getF16Type())));
    return a;
  }
  /// Issues (does not commit) the P.V wgmmas on the accumulators of `next`
  /// with P as pOperands gave it (`a`); returns the new accumulators, valid
  /// once waited for. Every A register is ready before the fence, so that
  /// ptxas need not wait for the warpgroup between the wgmmas.
  SmallVector<Value> issuePV(ArrayRef<Value> a, Value slot,
                             ArrayRef<Value> next) {
    int64_t d = shape.headDim, keysPerStep = shape.e4m3Pv ? 32 : 16;
    SmallVector<Value> regs = accumulatorRegs(next);
    Value vTile = advance(vDesc, mul(b, slot, WgLayout(shape).vSlot()));
    // The V^T rows are 64 keys: a k step of n keys is n bytes (e4m3) or
    // 2n (f16) further, 32 either way.
    for (int64_t kk = 0; kk < kTileKeys / keysPerStep; ++kk)
      wgmma(regs, a.slice(4 * kk, 4), advance(vTile, indexConst(b, 32 * kk)), d,
            keysPerStep, shape.e4m3Pv ? ".f32.e4m3.e4m3" : ".f32.f16.f16", true,
            kk == 0);
    return regs;
  }

  /// The accumulator registers of `next` (per 8-channel tile, 4 each).
  SmallVector<Value> accumulatorRegs(ArrayRef<Value> next) {
    SmallVector<Value> regs;
    for (int64_t u = 0; u < shape.headDim / 8; ++u)
      for (int64_t i = 0; i < 4; ++i)
        regs.push_back(vector::ExtractOp::create(b, next[4 + u],
                                                 ArrayRef<int64_t>{i / 2, i % 2}));
    return regs;
  }

  /// Whether every tile has one key scale (stage-1 blocks of whole tiles).
  bool tileScales() const {
    return view.k.stage1.getBlock() % kTileKeys == 0;
  }

  /// The scores with keys past the end, or after a causal row's diagonal,
  /// at -inf.
  void applyMask(SmallVector<SmallVector<Value>> &s, Value first) {
    for (int64_t nt = 0, e = s.size(); nt < e; ++nt)
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t ci = 0; ci < 2; ++ci) {
          Value j = add(b, first, add(b, mul(b, inGroup, 2),
                                      indexConst(b, nt * 8 + ci)));
          Value masked = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, j,
                                               indexConst(b, shape.cacheKeys));
          if (shape.causal) {
            Value limit = add(b, rows[r], indexConst(b, shape.cacheKeys -
                                                            shape.queries));
            masked = arith::OrIOp::create(
                b, masked,
                arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, j, limit));
          }
          Value &v = s[nt][2 * r + ci];
          v = arith::SelectOp::create(b, masked, f32Const(b, -INFINITY), v);
        }
  }

  /// state = {max0, max1 (base-2 logits), sum0, sum1 (per lane),
  /// acc[d/8] (2x2 f32)}.
  SmallVector<Value> processTile(Value first, Value slot, Value needsMask,
                                 ValueRange state) {
    Value tileScale;
    SmallVector<SmallVector<Value>> s = scores(slot, tileScale);
    SmallVector<Value> corr;
    SmallVector<Value> next = softmaxTile(s, tileScale, first, needsMask, state, corr);
    rescale(state, corr, next);

    if (shape.wgmma) {
      wgmmaPV(s, slot, next);
      return next;
    }
    return mmaPV(s, slot, next);
  }

  /// Applies the factors `corr` of softmaxTile to the accumulators of
  /// `next` (skipped unless a row max grew from `state`'s).
  void rescale(ValueRange state, ArrayRef<Value> corr, SmallVector<Value> &next) {
    int64_t n = shape.headDim / 8;
    SmallVector<Value> accs =
        rescaleIfGrew(b, {state[0], state[1]}, {next[0], next[1]}, corr,
                      ArrayRef<Value>(next).slice(4, n));
    llvm::copy(accs, next.begin() + 4);
  }

  /// Masks (when `needsMask`) and exponentiates the tile's scores `s` in
  /// place, giving P; returns the state with the new row maxima and sums
  /// (the accumulators untouched) and the factors `corr` that the
  /// accumulators still need.
  SmallVector<Value> softmaxTile(SmallVector<SmallVector<Value>> &s,
                                 Value tileScale, Value first, Value needsMask,
                                 ValueRange state, SmallVector<Value> &corr,
                                 bool voteFirst = true) {
    {
      // Only the tiles that hold masked keys pay for the mask.
      SmallVector<Value> flat;
      for (auto &tile : s)
        llvm::append_range(flat, tile);
      auto ifOp = scf::IfOp::create(b, ValueRange(flat).getTypes(), needsMask,
                                    /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      applyMask(s, first);
      SmallVector<Value> maskedFlat;
      for (auto &tile : s)
        llvm::append_range(maskedFlat, tile);
      scf::YieldOp::create(b, maskedFlat);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, flat);
      for (size_t i = 0; i < s.size(); ++i)
        for (size_t k = 0; k < s[i].size(); ++k)
          s[i][k] = ifOp.getResult(i * 4 + k);
    }

    // The running max is kept in base-2 logits: x * f, with f the row's
    // factor (times the tile's key scale), x the score (minus the bias).
    SmallVector<Value> next(state.begin(), state.end());
    corr.assign(2, Value());
    // The maxima are lazy (as in the decode kernel): a row's reference m
    // moves only when the tile's max passes it by more than `lazy` binades,
    // so after the first tiles the accumulators are seldom rescaled; any
    // reference is exact, and p = 2^(logit - m) <= 2^lazy.
    // With pv = e4m3, P carries the tile's V scale s (V^T holds bare codes)
    // and 2^(8 - lazy) (e4m3 reaches 448): p' = 2^(logit + log2 s - m + 8 -
    // lazy), m the reference of logit + log2 s, so p' <= 256 and P.V
    // accumulates 2^(8 - lazy) sum 2^(logit - m) v; the row sum adds p' / s
    // to match. A smaller `lazy` there keeps terms 14 binades below the
    // reference above e4m3's smallest subnormal. A zero scale (a block of
    // zero values) is raised to 2^-100 so that 1 / s stays finite.
    double lazy = shape.e4m3Pv ? kLazyMaxLog2E4m3 : kLazyMaxLog2;
    Value maxShift, pShift, sumScale;
    if (shape.e4m3Pv) {
      Value vs = stage1ScaleAt(b, view.v.scales, view.v.stage1, bi, hk, first,
                               Value());
      vs = arith::MaximumFOp::create(b, vs, f32Const(b, 0x1p-100));
      maxShift = inlineAsm(b, b.getF32Type(), vs, "lg2.approx.ftz.f32 $0, $1;",
                           "=f,f", /*pure=*/true);
      pShift = arith::AddFOp::create(b, maxShift, f32Const(b, 8.0 - lazy));
      sumScale = arith::DivFOp::create(b, f32Const(b, 1.0), vs);
    }
    // With `voteFirst`, the lane's own max first: only when some lane of
    // the warp passes its row's reference (a warp-uniform branch) do the
    // quads agree on the tile's max (shuffles) and the rows move. H200: B4
    // N4K e4m3 1610 -> 1481 us. The overlapped loop (d = 64), short of
    // registers with the next tile's dot products in flight, reduces every
    // tile instead: the vote's longer-lived values made it spill (B16 N1K
    // d64 216 against 208 us).
    SmallVector<Value> f(2), bias(2), x(2);
    Value passedLane;
    auto logit = [&](int64_t r, Value v) {
      Value l =
          arith::MulFOp::create(b, arith::SubFOp::create(b, v, bias[r]), f[r]);
      return maxShift ? arith::AddFOp::create(b, l, maxShift).getResult() : l;
    };
    auto passes = [&](int64_t r, Value l) {
      return arith::CmpFOp::create(
          b, arith::CmpFPredicate::OGT, l,
          arith::AddFOp::create(b, state[r], f32Const(b, lazy)));
    };
    for (int64_t r = 0; r < 2; ++r) {
      f[r] = rowFactor[r];
      bias[r] = f32Const(b, 0.0);
      if (tileScale) {
        f[r] = arith::MulFOp::create(b, f[r], tileScale);
        bias[r] = f32Const(b, kDotBias);
      }
      x[r] = s[0][2 * r];
      for (auto &tile : s)
        for (int64_t ci = 0; ci < 2; ++ci)
          x[r] = arith::MaximumFOp::create(b, x[r], tile[2 * r + ci]);
      if (!voteFirst)
        continue;
      Value p = passes(r, logit(r, x[r]));
      passedLane =
          passedLane ? arith::OrIOp::create(b, passedLane, p).getResult() : p;
    }
    // The rows' references and corrections.
    auto move = [&] {
      SmallVector<Value> out(4);
      for (int64_t r = 0; r < 2; ++r) {
        Value tileMax = logit(r, overQuad<arith::MaximumFOp>(b, x[r]));
        out[r] =
            arith::SelectOp::create(b, passes(r, tileMax), tileMax, state[r]);
        out[2 + r] = exp2Ftz(b, arith::SubFOp::create(b, state[r], out[r]));
      }
      return out;
    };
    Value one = f32Const(b, 1.0);
    SmallVector<Value> moved =
        voteFirst
            ? ifAnyLane(b, passedLane, {state[0], state[1], one, one}, move)
            : move();
    for (int64_t r = 0; r < 2; ++r) {
      Value m = moved[r];
      corr[r] = moved[2 + r];
      next[r] = m;
      // p = 2^(x f - (bias f + m)): one FMA per score.
      Value offset =
          arith::NegFOp::create(b, math::FmaOp::create(b, bias[r], f[r], m));
      if (pShift)
        offset = arith::AddFOp::create(b, offset, pShift);
      Value sum = arith::MulFOp::create(b, state[2 + r], corr[r]);
      Value tileSum;
      for (auto &tile : s)
        for (int64_t ci = 0; ci < 2; ++ci) {
          Value &p = tile[2 * r + ci];
          p = exp2Ftz(b, math::FmaOp::create(b, p, f[r], offset));
          tileSum = tileSum ? arith::AddFOp::create(b, tileSum, p).getResult() : p;
        }
      next[2 + r] = sumScale ? math::FmaOp::create(b, tileSum, sumScale, sum)
                             : arith::AddFOp::create(b, sum, tileSum).getResult();
    }
    return next;
  }

  /// O += P V on mma.sync; returns `next` with the new accumulators.
  SmallVector<Value> mmaPV(ArrayRef<SmallVector<Value>> s, Value slot,
                           SmallVector<Value> next) {
    // P.V: the score fragments of n tiles 2k and 2k+1 are the A fragment of
    // k step k (m16n8k16 .f16); one transposed x4 ldmatrix gives the B
    // fragments of two 8-channel tiles.
    int64_t d = shape.headDim;
    auto aType = VectorType::get({4, 2}, b.getF16Type());
    auto bType = VectorType::get({2, 2}, b.getF16Type());
    auto x4 = VectorType::get({4, 2}, b.getF16Type());
    Value vBase = mul(b, slot, kTileKeys * d);
    for (int64_t k = 0; k < kTileKeys / 16; ++k) {
      SmallVector<Value> p;
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t ci = 0; ci < 2; ++ci)
            p.push_back(fromF32(b, s[2 * k + half][2 * r + ci], b.getF16Type()));
      Value a = vector::FromElementsOp::create(b, aType, p);
      for (int64_t pair = 0; pair < d / 16; ++pair) {
        // Chunks 2 pair, 2 pair + 1: their low three bits are swizzled (the
        // lane's offset for pair % 4), the rest is 8 chunks of 8 channels.
        Value at = add(b, vBase,
                       add(b, vLane[pair % 4],
                           indexConst(b, k * 16 * d + (pair / 4) * 64)));
        Value m = nvgpu::LdMatrixOp::create(b, x4, vRing, ValueRange{at},
                                            /*transpose=*/true, /*numTiles=*/4);
        for (int64_t n = 0; n < 2; ++n) {
          int64_t u = 2 * pair + n;
          next[4 + u] = nvgpu::MmaSyncOp::create(
              b, a, fragmentPair(b, m, 2 * n, bType), next[4 + u],
              ArrayRef<int64_t>{16, 8, 16});
        }
      }
    }
    return next;
  }

  void storeOutput(Value out, ArrayRef<Value> st) {
    for (int64_t r = 0; r < 2; ++r) {
      Value sum = overQuad<arith::AddFOp>(b, st[2 + r]);
      Value inv = arith::DivFOp::create(b, f32Const(b, 1.0), sum);
      Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rows[r],
                                            indexConst(b, shape.queries));
      // The lane's two adjacent channels of each 8-channel tile as one
      // vector store: a warp's store fills whole 32-byte sectors (f32).
      ifThen(b, inRange, [&] {
        int64_t width = outType.getIntOrFloatBitWidth() / 8;
        for (int64_t u = 0; u < shape.headDim / 8; ++u) {
          SmallVector<Value> pair;
          for (int64_t ci = 0; ci < 2; ++ci) {
            Value v = vector::ExtractOp::create(b, st[4 + u],
                                                ArrayRef<int64_t>{r, ci});
            pair.push_back(
                fromF32(b, arith::MulFOp::create(b, v, inv), outType));
          }
          Value c = add(b, mul(b, inGroup, 2), indexConst(b, u * 8));
          storeVector(b, pair, out, {bi, h, rows[r], c}, 2 * width);
        }
      });
    }
  }

  ImplicitLocOpBuilder &b;
  const AttentionShape &shape;
  const AttentionView &view;
  const MmaStaged &staged;
  Type outType;
  RingLayout ring;
  Value kRing, vRing, sRing, barriers, tid, group, inGroup, bi, h, hk;
  // The wgmma variant's query rows in shared memory and the descriptors of
  // them (its warpgroup's) and of the K and V^T rings.
  Value qRows, qDesc, kDesc, vDesc;
  SmallVector<Value> rows, clampedRows, qFrags, rowFactor, kLane, vLane;
};
} // namespace

void mlir::qattn::kernels::emitMmaAttention(ImplicitLocOpBuilder &b,
                                            const AttentionShape &shape,
                                            const AttentionView &view,
                                            const MmaStaged &staged,
                                            Type outType, Value out) {
  MmaEmitter(b, shape, view, staged, outType).emit(out);
}
