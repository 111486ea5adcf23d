//===- TileDequantize.cpp - loaded K/V tiles as mma A fragments -----------===//
//
// Part of the qattn project.
//
// qattn.dequantize_tile in registers: the codes a lane loaded become the
// f16x2 pairs of its A fragments, exactly (q8' is an integer in [-128, 127],
// Dequantize.h). Stage-2 codes are read in place within their words, in the
// channel order of their packing (LaneChannels); int8 tiles (the decode
// buffer, stage-1 caches) pick their bytes in that same order with one prmt
// per pair, so that one query fragment serves the cache and the buffer. The
// stage-1 scale rides along: the scores and P^T apply it. Stage-1 scales per
// channel, which neither can factor out, multiply each pair in f32 before
// its one rounding to f16 (as a float cache's values are rounded). Each
// fragment is made where its mma takes it (WarpProgram::reg): made all at once,
// a tile's fragments held 64 registers at d = 128 and pushed ptxas to spill.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include <deque>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

/// Bytes `lo` of `loWords` and `hi` of `hiWords`, int8 values, as an f16x2
/// pair: biased to unsigned (xor 0x80), read as 1024 + 128 + v, less 1152.
static Value int8Pair(ImplicitLocOpBuilder &b, Value loWords, int64_t lo,
                      Value hiWords, int64_t hi) {
  Value magic = i32Const(b, (kMagic1024 << 16 | kMagic1024) ^ 0x00800080);
  Value pair = half2(
      b, maskXor(b, bytePair(b, loWords, lo, hiWords, hi), 0x00ff00ff, magic));
  return arith::SubFOp::create(b, pair, half2Const(b, 1152, 1152));
}

/// The f16x2 group constants (s2, and z2 as dequantPair takes it) of each
/// pair unit of stage-2 group `group` of a tile: K's channel pairs, or V's
/// channels (one channel in both halves). Unit u's codes sit at bit (u mod
/// 16/bits) * bits of their 16-bit half. Staged once per warp where the tile
/// came through the ring (`staged`, TileConstants.cpp), else converted by
/// each lane from its raw bytes. Each is loaded or made at its first use
/// (short live ranges, as the decode kernel found) and reused by the group's
/// other key blocks.
class GroupConstants {
public:
  GroupConstants(WarpProgram &w, DequantizeTileOp op, bool keys, bool isStaged,
                 int64_t group)
      : w(w), s2(op.getStage2Attr()), keys(keys) {
    if (!s2)
      return;
    if (isStaged) {
      staged.emplace(w, keys, group);
      return;
    }
    scales = w.reg(op.getParts()[1], group);
    zeros = w.reg(op.getParts()[2], group);
    made.resize(keys ? w.channels.keyPairs.size()
                     : w.channels.valueChannels.size());
  }

  std::pair<Value, Value> operator[](int64_t u) {
    if (staged)
      return (*staged)[u];
    if (!made[u] || !w.usableHere(made[u]->first)) {
      int64_t bits = w.regBits(keys);
      auto [lo, hi] = keys ? w.channels.keyPairs[u]
                           : std::pair(w.channels.valueChannels[u],
                                       w.channels.valueChannels[u]);
      made[u] = groupPairs(w.b, {scales, scales}, {zeros, zeros}, lo, hi,
                           u % (16 / bits) * bits, bits, s2.getAnchor(),
                           w.codeBits(keys));
    }
    return *made[u];
  }

private:
  WarpProgram &w;
  Stage2Attr s2;
  bool keys;
  std::optional<StagedConstants> staged;
  Value scales, zeros;
  SmallVector<std::optional<std::pair<Value, Value>>> made;
};

/// The stage-1 scales per channel of a tile's lane channels (K: lane t's
/// d/4, V: lane g's d/8, local indices as in LaneChannels), as f32, each read
/// at its first use: from the warp's row in the ring, or from the words the
/// lane loaded. Null scales (one per tile) leave pairs as they are.
class ChannelScales {
public:
  /// The scales of the tile's `piece`-th stage-1 block.
  ChannelScales(WarpProgram &w, Value scales, bool keys, int64_t piece)
      : w(w), piece(piece) {
    if (cast<RankedTensorType>(scales.getType()).getRank() != 2)
      return;
    tile = scales;
    int64_t laneChannels = keys ? w.headDim / 4 : w.headDim / 8;
    channel0 = mul(w.b, keys ? w.t : w.g, laneChannels);
    made.resize(laneChannels);
  }

  explicit operator bool() const { return static_cast<bool>(tile); }

  /// `pair` (f16x2) times the scales of local channels `lo` and `hi`.
  Value scale(Value pair, int64_t lo, int64_t hi) {
    ImplicitLocOpBuilder &b = w.b;
    auto f32x2 = VectorType::get({2}, b.getF32Type());
    Value s = vector::FromElementsOp::create(
        b, f32x2, ValueRange{(*this)[lo], (*this)[hi]});
    Value x =
        arith::MulFOp::create(b, arith::ExtFOp::create(b, f32x2, pair), s);
    return arith::TruncFOp::create(b, pair.getType(), x);
  }

private:
  Value operator[](int64_t c) {
    if (made[c] && w.usableHere(made[c]))
      return made[c];
    ImplicitLocOpBuilder &b = w.b;
    Value word;
    int64_t bytes;
    auto ring = w.readFromRing.find(tile);
    if (ring != w.readFromRing.end()) {
      const RingTile::Piece &row = ring->second.pieces[piece];
      bytes = row.rowBytes / w.headDim;
      Value byte = add(b, add(b, ring->second.slot, w.idx(row.offset)),
                       mul(b, add(b, channel0, w.idx(c)), bytes));
      word = vector::ExtractOp::create(
          b,
          vector::LoadOp::create(b, VectorType::get({1}, b.getI32Type()),
                                 w.ring, ValueRange{div(b, byte, 4)}),
          ArrayRef<int64_t>{0});
      if (bytes == 2) {
        // The word holding the half at `byte` (2-byte aligned).
        Value odd = arith::IndexCastOp::create(b, b.getI32Type(),
                                               mul(b, rem(b, byte, 4), 8));
        word = arith::ShRUIOp::create(b, word, odd);
      }
    } else {
      Value words = w.reg(tile, piece);
      int64_t count = cast<VectorType>(words.getType()).getNumElements();
      bytes = 4 * count / static_cast<int64_t>(made.size());
      word =
          vector::ExtractOp::create(b, words, ArrayRef<int64_t>{c * bytes / 4});
      if (bytes == 2 && c % 2)
        word = arith::ShRUIOp::create(b, word, i32Const(b, 16));
    }
    Value s;
    if (bytes == 4) {
      s = arith::BitcastOp::create(b, b.getF32Type(), word);
    } else {
      Value half = arith::TruncIOp::create(b, b.getI16Type(), word);
      Value f16 = arith::BitcastOp::create(b, b.getF16Type(), half);
      s = arith::ExtFOp::create(b, b.getF32Type(), f16);
    }
    made[c] = s;
    return s;
  }

  WarpProgram &w;
  int64_t piece;
  Value tile, channel0;
  SmallVector<Value> made;
};

/// The group constants and stage-1 scales per channel that hold for one
/// half of a key block (GroupConstants and ChannelScales of its group and
/// block).
struct HalfConstants {
  GroupConstants *group;
  ChannelScales *scales;
};

/// K's A fragment of S^T = K Q^T for 16-channel chunk j: lane t's pairs 2j
/// and 2j + 1 of keys g and g + 8 (`codes`, the key block's two words; the
/// constants of each key's half, `halves`).
static Value keyFragment(WarpProgram &w, DequantizeTileOp op,
                         ArrayRef<Value> codes,
                         std::array<HalfConstants, 2> halves, int64_t j) {
  ImplicitLocOpBuilder &b = w.b;
  Stage2Attr s2 = op.getStage2Attr();
  auto pairOf = [&](int64_t p, int64_t key) -> Value {
    GroupConstants &consts = *halves[key].group;
    ChannelScales &channelScales = *halves[key].scales;
    auto [lo, hi] = w.channels.keyPairs[p];
    Value pair;
    if (!s2) {
      pair = int8Pair(b, codes[key], lo, codes[key], hi);
    } else {
      int64_t bits = w.regBits(true), perWord = 16 / bits;
      Value word = vector::ExtractOp::create(b, codes[key],
                                             ArrayRef<int64_t>{p / perWord});
      auto [s, z] = consts[p];
      pair = dequantPair(b, word, p % perWord * bits, bits, s, z,
                         s2.getAnchor(), w.keyBits);
    }
    return channelScales ? channelScales.scale(pair, lo, hi) : pair;
  };
  return fragment(b, {pairOf(2 * j, 0), pairOf(2 * j, 1), pairOf(2 * j + 1, 0),
                      pairOf(2 * j + 1, 1)});
}

/// V^T's A fragment of O^T += V^T P^T for 16-channel m tile i: lane g's
/// channels 2i (row g) and 2i + 1 (row g + 8) of keys (2t, 2t + 1) and
/// (2t + 8, 2t + 9) (`codes`, the key block's four words; the constants of
/// the two halves, `halves`), each pair one channel of two keys.
static Value valueFragment(WarpProgram &w, DequantizeTileOp op,
                           ArrayRef<Value> codes,
                           std::array<HalfConstants, 2> halves, int64_t i) {
  ImplicitLocOpBuilder &b = w.b;
  Stage2Attr s2 = op.getStage2Attr();
  // The pairs of channel u for keys (2t, 2t + 1) and (2t + 8, 2t + 9).
  auto pairsOf = [&](int64_t u) -> std::array<Value, 2> {
    int64_t c = w.channels.valueChannels[u];
    std::array<Value, 2> out;
    auto scaled = [&](Value pair, int64_t reg) {
      ChannelScales &channelScales = *halves[reg].scales;
      return channelScales ? channelScales.scale(pair, c, c) : pair;
    };
    if (!s2) {
      for (int64_t reg = 0; reg < 2; ++reg)
        out[reg] =
            scaled(int8Pair(b, codes[2 * reg], c, codes[2 * reg + 1], c), reg);
      return out;
    }
    int64_t bits = w.regBits(false), perHalf = 16 / bits;
    // The 16-bit chunk holding channel u, of the two keys side by side.
    int64_t chunk = u / perHalf, byte = 2 * (chunk % 2);
    int64_t sel = byte | (byte + 1) << 4 | (4 + byte) << 8 | (5 + byte) << 12;
    for (int64_t reg = 0; reg < 2; ++reg) {
      auto [s, z] = (*halves[reg].group)[u];
      auto word = [&](int64_t key) {
        return vector::ExtractOp::create(b, codes[key],
                                         ArrayRef<int64_t>{chunk / 2});
      };
      Value both = NVVM::PermuteOp::create(b, b.getI32Type(), word(2 * reg),
                                           word(2 * reg + 1), i32Const(b, sel),
                                           NVVM::PermuteMode::DEFAULT);
      out[reg] = scaled(dequantPair(b, both, u % perHalf * bits, bits, s, z,
                                    s2.getAnchor(), w.valueBits),
                        reg);
    }
    return out;
  };
  std::array<Value, 2> lo = pairsOf(2 * i), hi = pairsOf(2 * i + 1);
  return fragment(b, {lo[0], hi[0], lo[1], hi[1]});
}

void mlir::qattn::tiles::lowerDequantizeTile(WarpProgram &w,
                                             DequantizeTileOp op) {
  bool keys = *op.getLayout() == FragmentLayout::mma_keys_a;
  // Codes of 2 (K) or 4 (V) keys per key block; a set of constants per
  // stage-2 group of the tile (one where the group is the tile or longer).
  int64_t perBlock = keys ? 2 : 4, chunks = w.headDim / 16;
  Value codes = op.getParts()[0];
  int64_t blocks = w.numRegs(codes) / perBlock;
  Stage2Attr s2 = op.getStage2Attr();
  bool staged = s2 && stageGroupConstants(w, op, keys);
  int64_t groups =
      s2 ? tileConstantSets(s2, blocks * kKeyBlock, op.getParts()[1]) : 1;
  // std::deque: the halves below point into it.
  auto consts = std::make_shared<std::deque<GroupConstants>>();
  for (int64_t group = 0; group < groups; ++group)
    consts->emplace_back(w, op, keys, staged, group);
  // The stage-1 scales: one per tile (or per block of 8 keys), or, per
  // channel, the rows of each block of the tile, which the fragments carry
  // (their scales then 1).
  Value scales = op.getParts().back();
  // (Rows from the ring are read where used, not registers.)
  auto rows = w.readFromRing.find(scales);
  int64_t scaleCount = rows != w.readFromRing.end()
                           ? static_cast<int64_t>(rows->second.pieces.size())
                           : w.numRegs(scales);
  auto channelScales = std::make_shared<std::deque<ChannelScales>>();
  for (int64_t piece = 0; piece < scaleCount; ++piece)
    channelScales->emplace_back(w, scales, keys, piece);
  Regs scaleRegs;
  if (channelScales->front())
    scaleRegs.push_back(f32Const(w.b, 1.0));
  else
    for (int64_t piece = 0; piece < scaleCount; ++piece)
      scaleRegs.push_back(w.reg(scales, piece));
  // Fragment kb * chunks + j is made at its first use; the scales follow.
  int64_t fragments = blocks * chunks;
  w.setLazy(
      op.getValues(), fragments + scaleRegs.size(),
      [=, &w](int64_t at) -> Value {
        if (at >= fragments)
          return scaleRegs[at - fragments];
        int64_t kb = at / chunks, j = at % chunks;
        std::array<HalfConstants, 2> halves;
        for (int64_t h = 0; h < 2; ++h)
          halves[h] = {
              &(*consts)[constantOfHalf(kb, h, groups, blocks)],
              &(*channelScales)[constantOfHalf(kb, h, scaleCount, blocks)]};
        SmallVector<Value> block;
        for (int64_t key = 0; key < perBlock; ++key)
          block.push_back(w.reg(codes, kb * perBlock + key));
        return keys ? keyFragment(w, op, block, halves, j)
                    : valueFragment(w, op, block, halves, j);
      });
}

Value mlir::qattn::tiles::tileScale(WarpProgram &w, Value tile, int64_t blocks,
                                    int64_t kb, int64_t h) {
  int64_t fragments = blocks * (w.headDim / 16);
  int64_t count = w.numRegs(tile) - fragments;
  return w.reg(tile, fragments + constantOfHalf(kb, h, count, blocks));
}
