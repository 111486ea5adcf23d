//===- TileConstants.cpp - group constants converted once per warp --------===//
//
// Part of the qattn project.
//
// The mma fragments replicate a K channel in the 8 lanes of a column (one
// t) and a V channel in the 4 lanes of a row (one g), so each lane making
// the f16x2 group constants (s2, z2) of its own channels converts each of
// them 8 (K) or 4 (V) times (on the H200 about 170 of the tile layer's 1040
// instructions per 32-key tile), and copying the raw bytes per lane moves
// them as often (at groups of 16, more bytes than the codes). Where a tile
// comes through the shared-memory ring, the warp copies each raw row (d
// bytes of s2, of z2) once (TileRing.cpp), converts each constant once,
// spread over its lanes, into a staging area after the ring's slots, and
// each lane then reads the words it needs, 16 bytes at a time, next to
// their use.
//
// Staging area of K: the s2 pairs, then the z2 (or fused c) pairs, each 2d
// bytes: lane t's d/8 pairs in chunks of 4, chunk j at [j][t] (four lanes t
// of a load read adjacent chunks; the 8 lanes g share them). Of V: one word
// per channel, its z2 (or c) constant in the low half and s2 in the high
// half, lane g's d/8 channels at [g][u]. A conversion unit keeps one code
// shift per pair position, so that its constants take compile-time affine
// maps while its channels (the unit's) are picked by address: in K a run of
// pairs of one code word half of one t, in V the channels of one 16-bit
// code chunk. Each staging is fenced by two warp barriers: before it, all
// lanes' copies of the rows are complete and the previous tile's reads of
// the area are done; after it, its stores are visible.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

/// The i32 word of the ring at byte `byte` (a multiple of 4), shifted right
/// by `shift` bits (null: none), as a one-element vector.
static Value ringWord(WarpProgram &w, Value byte, Value shift = Value()) {
  ImplicitLocOpBuilder &b = w.b;
  Value word = vector::LoadOp::create(b, VectorType::get({1}, b.getI32Type()),
                                      w.ring, ValueRange{div(b, byte, 4)});
  if (!shift)
    return word;
  Value x = vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
  x = arith::ShRUIOp::create(b, x, shift);
  return vector::FromElementsOp::create(b, word.getType(), ValueRange{x});
}

/// Stores `pairs` (f16x2 each) as consecutive words at byte `byte`.
static void storePairs(WarpProgram &w, ArrayRef<Value> pairs, Value byte) {
  ImplicitLocOpBuilder &b = w.b;
  SmallVector<Value> words;
  for (Value p : pairs)
    words.push_back(vector::ExtractOp::create(
        b,
        vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), p),
        ArrayRef<int64_t>{0}));
  int64_t n = words.size();
  Value v = vector::FromElementsOp::create(
      b, VectorType::get({n}, b.getI32Type()), words);
  vector::StoreOp::create(b, v, w.ring, ValueRange{div(b, byte, 4)},
                          /*nontemporal=*/false, llvm::Align(4 * n));
}

/// The first byte of the warp's row of group constants `from` of the
/// tile's group `group`.
static Value rowByte(WarpProgram &w, const RingRead &from, int64_t group) {
  return add(w.b, from.slot, w.idx(from.pieces[group].offset));
}

/// K: unit (word wd, half, t), t fastest, converts pairs wd * pairs + half
/// * perUnit + j (j < perUnit) of lane t. Pair j of either half has the
/// shift of pair j of the word, less a byte (the halves lie 8 bits apart):
/// the same M, so the same affine maps.
static void stageKeys(WarpProgram &w, Stage2Attr s2, const RingRead &scales,
                      const RingRead &zeros, int64_t group) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t d = w.headDim, bits = w.regBits(true);
  int64_t perWord = 32 / bits, pairs = 16 / bits, perUnit = pairs / 2;
  int64_t words = d / 4 * bits / 32;
  const auto &kp = w.channels.keyPairs;
  assert(perUnit <= 4 &&
         llvm::all_of(llvm::seq<int64_t>(0, perUnit),
                      [&](int64_t j) {
                        return kp[j].first < perUnit &&
                               kp[j].second >= perWord / 2 &&
                               kp[j].second < perWord / 2 + perUnit;
                      }) &&
         "a unit's pairs lie in its runs of channels");
  spreadOver(b, w.lane, kThreadsPerWarp, 2 * 4 * words, [&](Value unit) {
    Value lt = rem(b, unit, 4), half = rem(b, div(b, unit, 4), 2);
    Value wd = div(b, unit, 8);
    Value lo = add(b, mul(b, wd, perWord), mul(b, half, perUnit));
    // Runs of perUnit bytes: at 4 bits half a word, read shifted down.
    Value shift;
    if (perUnit % 4)
      shift = arith::IndexCastOp::create(b, b.getI32Type(),
                                         mul(b, rem(b, lo, 4), 8));
    Value loWord = mul(b, div(b, lo, 4), 4);
    auto run = [&](const RingRead &from, int64_t at) {
      Value byte = add(b, rowByte(w, from, group),
                       add(b, mul(b, lt, d / 4), add(b, loWord, w.idx(at))));
      return ringWord(w, byte, shift);
    };
    Value sLo = run(scales, 0), sHi = run(scales, perWord / 2);
    Value zLo = run(zeros, 0), zHi = run(zeros, perWord / 2);
    SmallVector<Value> sOut, zOut;
    for (int64_t j = 0; j < perUnit; ++j) {
      auto [sc, zc] = groupPairs(b, {sLo, sHi}, {zLo, zHi}, kp[j].first,
                                 kp[j].second - perWord / 2, j * bits, bits,
                                 s2.getAnchor(), w.keyBits);
      sOut.push_back(sc);
      zOut.push_back(zc);
    }
    Value first = add(b, mul(b, wd, pairs), mul(b, half, perUnit));
    Value at = add(
        b, w.idx(w.keyConstants + group * 4 * d),
        add(b, mul(b, lt, 16),
            add(b, mul(b, div(b, first, 4), 64), mul(b, rem(b, first, 4), 4))));
    storePairs(w, sOut, at);
    storePairs(w, zOut, add(b, at, w.idx(2 * d)));
  });
}

/// V: unit u converts the channels of 16-bit code chunk u (their code
/// shifts are their places in it; the pack order permutes channels only
/// within it).
static void stageValues(WarpProgram &w, Stage2Attr s2, const RingRead &scales,
                        const RingRead &zeros, int64_t group) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t d = w.headDim, bits = w.regBits(false), perChunk = 16 / bits;
  const auto &vc = w.channels.valueChannels;
  assert(llvm::all_of(llvm::seq<int64_t>(0, vc.size()),
                      [&](int64_t u) {
                        return vc[u] / perChunk == u / perChunk &&
                               vc[u] % perChunk == vc[u % perChunk];
                      }) &&
         "channels stay in their code chunk");
  Stage2Anchor anchor = s2.getAnchor();
  spreadOver(b, w.lane, kThreadsPerWarp, d / perChunk, [&](Value unit) {
    Value first = mul(b, unit, perChunk);
    auto raw = [&](const RingRead &from) {
      Value byte = add(b, rowByte(w, from, group), first);
      Value v = vector::LoadOp::create(
          b, VectorType::get({perChunk / 4}, b.getI32Type()), w.ring,
          ValueRange{div(b, byte, 4)}, /*nontemporal=*/false,
          llvm::Align(perChunk));
      return v;
    };
    Value sRaw = raw(scales), zRaw = raw(zeros);
    SmallVector<Value> out;
    for (int64_t j = 0; j < perChunk; ++j) {
      int64_t m = codeScale(j * bits);
      // z2 in the low half (with the zero's bias flip), s2 in the high one.
      Value word = constPair(
          b, bytePair(b, zRaw, vc[j], sRaw, vc[j]), i32Const(b, 0x00000080),
          affinePair(b, zeroAffine(m, anchor), scaleAffine(m)));
      if (fusesAt(j * bits, w.valueBits)) {
        auto halfOf = [&](int64_t h) {
          return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{h});
        };
        Value s = halfOf(1);
        word = vector::FromElementsOp::create(
            b, word.getType(),
            ValueRange{fusedConstant(b, s, halfOf(0), anchor), s});
      }
      out.push_back(word);
    }
    Value at =
        add(b, w.idx(w.valueConstants + group * 4 * d), mul(b, first, 4));
    for (int64_t c = 0; c < perChunk / 4; ++c)
      storePairs(w, ArrayRef<Value>(out).slice(4 * c, 4),
                 add(b, at, w.idx(16 * c)));
  });
}

bool mlir::qattn::tiles::stageGroupConstants(WarpProgram &w,
                                             DequantizeTileOp op, bool keys) {
  Stage2Attr s2 = op.getStage2Attr();
  auto scales = w.readFromRing.find(op.getParts()[1]);
  auto zeros = w.readFromRing.find(op.getParts()[2]);
  if (!s2 || scales == w.readFromRing.end() || zeros == w.readFromRing.end())
    return false;
  const RingRead &s = scales->second, &z = zeros->second;
  assert(s.pieces.size() == z.pieces.size() &&
         llvm::all_of(llvm::concat<const RingTile::Piece>(s.pieces, z.pieces),
                      [](const RingTile::Piece &p) { return p.rowBytes; }) &&
         (keys ? w.keyConstants : w.valueConstants) >= 0 &&
         "the ring holds a stage-2 tile's constants as rows, and stages them");
  warpSync(w);
  for (int64_t group = 0, e = s.pieces.size(); group < e; ++group) {
    if (keys)
      stageKeys(w, s2, s, z, group);
    else
      stageValues(w, s2, s, z, group);
  }
  warpSync(w);
  return true;
}

std::pair<Value, Value>
mlir::qattn::tiles::StagedConstants::operator[](int64_t u) {
  ImplicitLocOpBuilder &b = w.b;
  // Pair (K) or channel (V) u's word of region `which`, its chunk of 4
  // loaded 16 bytes at a time on first use.
  auto wordOf = [&](int64_t which) {
    Value &chunk = chunks[which][u / 4];
    if (!chunk || !w.usableHere(chunk)) {
      int64_t area =
          (keys ? w.keyConstants : w.valueConstants) + group * 4 * w.headDim;
      Value byte =
          keys ? add(b, w.idx(area + which * 2 * w.headDim + u / 4 * 64),
                     mul(b, w.t, 16))
               : add(b, w.idx(area + u / 4 * 16), mul(b, w.g, w.headDim / 2));
      // V's lane g reads at g d/2 bytes: 8-byte aligned at d = 80.
      chunk = vector::LoadOp::create(
          b, VectorType::get({4}, b.getI32Type()), w.ring,
          ValueRange{div(b, byte, 4)}, /*nontemporal=*/false,
          llvm::commonAlignment(llvm::Align(16), keys ? 16 : w.headDim / 2));
    }
    return half2(b,
                 vector::ExtractOp::create(b, chunk, ArrayRef<int64_t>{u % 4}));
  };
  if (keys)
    return {wordOf(0), wordOf(1)};
  Value word = wordOf(0);
  return {broadcastHalf(b, word, 1), broadcastHalf(b, word, 0)};
}
