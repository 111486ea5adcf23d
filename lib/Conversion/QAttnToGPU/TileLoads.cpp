//===- TileLoads.cpp - the tile layer's loads, into one lane's registers --===//
//
// Part of the qattn project.
//
// Each lane loads the bytes of its own fragment (pieces of 4 to 32 bytes,
// tilePieceBytes): the query columns of its B fragments, and of a K or V
// tile the codes of the keys its A fragment holds, the group constants of its
// channels and the tile's stage-1 scales. The loads of a pipelined key loop
// (qattn-pipeline) go through the shared-memory ring as cp.async copies
// (TileRing.cpp); other loads go straight into registers, asynchronous until
// first use.
//
// A tile lies in one page, so its first key is located once (the table
// read once per step, for K's tile and V's); a tile at or past the load's
// `bound` is read at row 0 of page 0 (batch entry 0) instead, memory that
// exists whatever the table holds there. A key past `bound` in a tile that
// is used reads its own row where the page (or entry) holds whole tiles
// (then a lane's keys lie whole rows apart, so their addresses are its
// first key's plus constants), else its first key's row.
// Such keys' scores are masked, so their values (finite: integer codes times
// the tile's constants) meet a weight of 0. Tiles are whole stage-1
// blocks and whole groups or whole multiples of them (checkLowerable), so
// the stage-1 scales and the constants come from the tile's first key's
// block and group and those after it (one past `bound`, where rows are not
// whole tiles, from the first one's row: it may not exist).
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"
#include "qattn/Target/TileCoverage.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <numeric>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

namespace {
/// Where a key of the cache lives: the entry (page or batch entry) and row.
struct KeyPlace {
  Value entry, row;
};

/// Locates key `key` of sequence `bi` (a safe place, row 0, when it is at or
/// past `bound`): through the page table (then page 0), or in batch entry
/// `bi`.
KeyPlace locate(WarpProgram &w, LoadKVTileOp op, Value bi, Value key,
                Value bound, int64_t rowsPerEntryDim) {
  ImplicitLocOpBuilder &b = w.b;
  Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, key, bound);
  Value zero = w.idx(0);
  Value safeKey = arith::SelectOp::create(b, valid, key, zero);
  const FlatTensor &first = w.tensor(op.getSources()[0]);
  // Batch entry bi exists whatever the key.
  if (!op.getPageTable())
    return {bi, safeKey};
  // K's and V's tiles of a step read the same entry: once (LLVM cannot
  // merge the reads across the copies' asm, which clobbers memory).
  auto lookup = std::make_tuple(op.getPageTable(), bi, key, bound);
  if (auto it = w.pageLookups.find(lookup); it != w.pageLookups.end() &&
                                            w.usableHere(it->second.first) &&
                                            w.usableHere(it->second.second))
    return {it->second.first, it->second.second};
  const FlatTensor &table = w.tensor(op.getPageTable());
  Value pageSize = first.sizes[rowsPerEntryDim];
  Value slot = arith::DivUIOp::create(b, safeKey, pageSize);
  Value page = arith::IndexCastOp::create(
      b, b.getIndexType(),
      memref::LoadOp::create(b, table.buffer,
                             ValueRange{table.linearize(b, {bi, slot})}));
  KeyPlace place{arith::SelectOp::create(b, valid, page, zero),
                 arith::RemUIOp::create(b, safeKey, pageSize)};
  w.pageLookups[lookup] = {place.entry, place.row};
  return place;
}

/// Key `first + dk` of the tile whose first key is at `head`: a tile lies in
/// one page (pages are whole tiles), so the table is read once per tile.
/// Where an entry's rows are whole tiles (pages, and entries of a static
/// multiple of the tile's keys), every row of the tile exists and a key past
/// `bound` reads its own row (finite codes, masked); otherwise it reads the
/// first key's row.
KeyPlace keyOfTile(WarpProgram &w, KeyPlace head, Value first, Value dk,
                   Value bound, bool wholeTiles) {
  ImplicitLocOpBuilder &b = w.b;
  Value row = add(b, head.row, dk);
  if (wholeTiles)
    return {head.entry, row};
  Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                      add(b, first, dk), bound);
  return {head.entry, arith::SelectOp::create(b, valid, row, head.row)};
}

/// The first byte of KV head `hk`'s codes in a key's row of stage-2 codes
/// (Stage2Attr::getHeadByteOffset; a select chain over the heads where their
/// widths differ).
Value headCodeByte(WarpProgram &w, Stage2Attr s2, Value hk) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t heads = s2.getBits().size();
  if (heads == 1)
    return mul(b, hk, s2.getHeadByteOffset(1, w.headDim));
  Value at = w.idx(0);
  for (int64_t h = 1; h < heads; ++h) {
    Value past =
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, hk, w.idx(h));
    at = arith::SelectOp::create(b, past,
                                 w.idx(s2.getHeadByteOffset(h, w.headDim)), at);
  }
  return at;
}

/// `bytes` bytes at element `at` of the buffer `t` as i32 words (one word
/// for 2 bytes; a size that is no power of two, 3-bit codes' 3, 6 or 12
/// bytes, aligned as its lowest set bit, or to `align` bytes where given, and
/// zero-padded to whole words).
Value loadBytes(WarpProgram &w, const FlatTensor &t, Value at, int64_t bytes,
                int64_t align = 0) {
  Type element = cast<MemRefType>(t.buffer.getType()).getElementType();
  if (!element.isInteger(8)) {
    // Scales per channel: f32 or f16 elements, a multiple of 4 bytes (24:
    // V's f16 at d = 96, 8-byte aligned).
    int64_t width = element.getIntOrFloatBitWidth();
    Value v = vector::LoadOp::create(
        w.b, VectorType::get({bytes * 8 / width}, element), t.buffer,
        ValueRange{at}, /*nontemporal=*/false,
        llvm::commonAlignment(llvm::Align(16), bytes));
    return vector::BitCastOp::create(
        w.b, VectorType::get({bytes / 4}, w.b.getI32Type()), v);
  }
  // Pieces of other sizes, and single bytes (2-bit V at d = 32: lane g's
  // byte g of a key's row, which a 2-byte load would read misaligned).
  if (!llvm::isPowerOf2_64(bytes) || bytes == 1) {
    ImplicitLocOpBuilder &b = w.b;
    Value v = vector::LoadOp::create(
        b, VectorType::get({bytes}, b.getI8Type()), t.buffer, ValueRange{at},
        /*nontemporal=*/false, llvm::Align(align ? align : bytes & -bytes));
    int64_t padded = llvm::alignTo(bytes, 4);
    if (padded != bytes) {
      Value zeros = vector::BroadcastOp::create(
          b, VectorType::get({padded - bytes}, b.getI8Type()),
          arith::ConstantIntOp::create(b, b.getI8Type(), 0));
      SmallVector<int64_t> mask(padded);
      std::iota(mask.begin(), mask.end(), 0);
      v = vector::ShuffleOp::create(b, v, zeros, mask);
    }
    return vector::BitCastOp::create(
        b, VectorType::get({padded / 4}, b.getI32Type()), v);
  }
  if (bytes >= 4)
    return loadWords(w.b, t.buffer, {at}, bytes, 32);
  return widen(w.b, loadWords(w.b, t.buffer, {at}, 2, 16));
}

/// The keys (offsets from the tile's first key) whose codes this lane's
/// fragment holds, key block by key block.
SmallVector<LaneKey> laneKeys(WarpProgram &w, FragmentLayout layout,
                              int64_t tileKeys) {
  int64_t perBlock = layout == FragmentLayout::mma_keys_a ? 2 : 4;
  SmallVector<LaneKey> keys;
  for (int64_t i = 0, e = perBlock * tileKeys / kKeyBlock; i < e; ++i)
    keys.push_back(laneKeyOf(w, layout, i));
  return keys;
}

} // namespace

LaneCodes mlir::qattn::tiles::laneCodesOf(int64_t headDim, bool keys,
                                          int64_t bits) {
  int64_t channels = keys ? headDim / 4 : headDim / 8;
  int64_t lanes = keys ? 4 : 8; // t, g
  // A code's unit: a bit, or a 3-bit group's code; 8 of them a byte or group.
  int64_t perLane = bits == 3 ? channels : channels * bits;
  int64_t reach = 0; // the most units a lane reads from its first byte/group
  for (int64_t l = 0; l < lanes; ++l)
    reach = std::max(reach, l * perLane % 8 + perLane);
  int64_t bytes =
      bits == 3 ? 3 * llvm::divideCeil(reach, 8) : llvm::divideCeil(reach, 8);
  return {channels, bits, bytes, reach != perLane};
}

Value mlir::qattn::tiles::laneCodeByte(ImplicitLocOpBuilder &b,
                                       const LaneCodes &codes, Value lane) {
  if (codes.bits == 3)
    return mul(b, div(b, mul(b, lane, codes.channels), 8), 3);
  return div(b, mul(b, lane, codes.channels * codes.bits), 8);
}

Value mlir::qattn::tiles::laneCodeShift(ImplicitLocOpBuilder &b,
                                        const LaneCodes &codes, Value lane) {
  // 3-bit codes are counted in codes of their group (4 bits once widened),
  // others in bits of their byte.
  bool widened = codes.bits == 3;
  Value units =
      rem(b, mul(b, lane, codes.channels * (widened ? 1 : codes.bits)), 8);
  return arith::IndexCastOp::create(b, b.getI32Type(),
                                    mul(b, units, widened ? 4 : 1));
}

/// `words` with the `bits`-bit codes of each byte in reverse order: a byte
/// of msb_first codes as lsb_first packs them (2 bits: fields 0-3 to 3-0).
static Value reverseCodesInBytes(ImplicitLocOpBuilder &b, Value words,
                                 int64_t bits) {
  assert(bits == 2 && "only 2-bit codes end inside a byte (d = 80)");
  int64_t count = cast<VectorType>(words.getType()).getNumElements();
  SmallVector<Value> out;
  for (int64_t i = 0; i < count; ++i) {
    Value x = vector::ExtractOp::create(b, words, ArrayRef<int64_t>{i});
    auto field = [&](uint32_t mask, int64_t up, int64_t down) -> Value {
      Value f = arith::AndIOp::create(b, x, i32Const(b, mask));
      return up ? arith::ShLIOp::create(b, f, i32Const(b, up)).getResult()
                : arith::ShRUIOp::create(b, f, i32Const(b, down)).getResult();
    };
    Value r =
        arith::OrIOp::create(b,
                             arith::OrIOp::create(b, field(0x03030303, 6, 0),
                                                  field(0x0c0c0c0c, 2, 0)),
                             arith::OrIOp::create(b, field(0x30303030, 0, 2),
                                                  field(0xc0c0c0c0, 0, 6)));
    out.push_back(r);
  }
  return vector::FromElementsOp::create(b, words.getType(), out);
}

/// `words` shifted down by `s` bits (i32, below 32) as one bit string, the
/// last word's upper bits zero.
static Value shiftWordsDown(ImplicitLocOpBuilder &b, Value words, Value s) {
  int64_t count = cast<VectorType>(words.getType()).getNumElements();
  SmallVector<Value> out;
  for (int64_t i = 0; i < count; ++i) {
    Value lo = vector::ExtractOp::create(b, words, ArrayRef<int64_t>{i});
    out.push_back(
        i + 1 < count
            ? Value(LLVM::FshrOp::create(
                  b,
                  vector::ExtractOp::create(b, words, ArrayRef<int64_t>{i + 1}),
                  lo, s))
            : Value(arith::ShRUIOp::create(b, lo, s)));
  }
  return vector::FromElementsOp::create(b, words.getType(), out);
}

/// 3-bit codes (`bytes` bytes of docs/FORMAT.md's bit string in `words`,
/// either order) in the 4-bit layout of the same order, which the 4-bit
/// dequantization takes: 8 codes (3 bytes) a word. Per word one prmt
/// gathers the 3 bytes (most significant first for msb_first), three
/// mask-and-shift steps move the codes apart (12-bit halves to 16, 6-bit
/// pairs to 8, 3-bit codes to 4), and msb_first swaps the word's bytes back.
Value mlir::qattn::tiles::widenThreeBitCodes(ImplicitLocOpBuilder &b,
                                             Value words, int64_t bytes,
                                             PackOrder order) {
  bool msb = order == PackOrder::msb_first;
  int64_t count = cast<VectorType>(words.getType()).getNumElements();
  auto permute = [&](Value x, Value y, int64_t sel) -> Value {
    return NVVM::PermuteOp::create(b, b.getI32Type(), x, y, i32Const(b, sel),
                                   NVVM::PermuteMode::DEFAULT);
  };
  auto spreadStep = [&](Value x, uint32_t keep, uint32_t move, int64_t by) {
    Value moved = arith::ShLIOp::create(
        b, arith::AndIOp::create(b, x, i32Const(b, move)), i32Const(b, by));
    return arith::OrIOp::create(
        b, arith::AndIOp::create(b, x, i32Const(b, keep)), moved);
  };
  SmallVector<Value> out;
  for (int64_t g = 0; g < bytes / 3; ++g) {
    int64_t first = 3 * g, word = first / 4;
    Value x = vector::ExtractOp::create(b, words, ArrayRef<int64_t>{word});
    Value y = vector::ExtractOp::create(
        b, words, ArrayRef<int64_t>{std::min(word + 1, count - 1)});
    int64_t at = first % 4; // bytes at, at + 1, at + 2 of {x: 0-3, y: 4-7}
    int64_t sel = msb ? (at + 2) | (at + 1) << 4 | at << 8
                      : at | (at + 1) << 4 | (at + 2) << 8;
    Value v =
        arith::AndIOp::create(b, permute(x, y, sel), i32Const(b, 0xffffff));
    v = spreadStep(v, 0x000fff, 0xfff000, 4);
    v = spreadStep(v, 0x003f003f, 0x0fc00fc0, 2);
    v = spreadStep(v, 0x07070707, 0x38383838, 1);
    if (msb)
      v = permute(v, v, 0x0123);
    out.push_back(v);
  }
  return vector::FromElementsOp::create(
      b, VectorType::get({static_cast<int64_t>(out.size())}, b.getI32Type()),
      out);
}

LaneKey mlir::qattn::tiles::laneKeyOf(WarpProgram &w, FragmentLayout layout,
                                      int64_t i) {
  if (layout == FragmentLayout::mma_keys_a)
    return {w.g, kKeyBlock * (i / 2) + 8 * (i % 2)};
  static constexpr int64_t kValueKeys[] = {0, 1, 8, 9};
  return {mul(w.b, w.t, 2), kKeyBlock * (i / 4) + kValueKeys[i % 4]};
}

void mlir::qattn::tiles::lowerLoadQueryTile(WarpProgram &w,
                                            LoadQueryTileOp op) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t d = w.headDim, group = op.getGroup();
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  int64_t pairs = group * qType.getDimSize(2);
  const FlatTensor &q = w.tensor(op.getQ());
  Value bi = w.scalar(op.getBatch()), hk = w.scalar(op.getKvHead());
  Value first = mul(b, w.scalar(op.getRowTile()), kTileRows);
  // The query head and query of row `row` of the tile, clamped to the last
  // pair (rows past it are masked).
  auto pairAt = [&](Value row) -> std::pair<Value, Value> {
    Value p = minIdx(b, add(b, first, row), w.idx(pairs - 1));
    return {add(b, mul(b, hk, group), rem(b, p, group)), div(b, p, group)};
  };
  Value scales = op.getQScales();
  bool channelScales =
      scales && op.getQStage1Attr().getGranularity() == Granularity::channel;
  auto vec = [&](Type t) { return VectorType::get({d / 4}, t); };
  // A lane's d/4 channels lie at a multiple of their bytes (24 int8 ones
  // at d = 96: 8-byte aligned).
  auto laneAlign = [&](Type t) {
    int64_t bytes = d / 4 * t.getIntOrFloatBitWidth() / 8;
    return llvm::commonAlignment(llvm::Align(16), bytes);
  };
  Regs regs;
  for (int64_t nb = 0; nb < w.rowBlocks; ++nb) {
    // Row 8 nb + g: the lane's column of the B fragments.
    auto [head, query] = pairAt(add(b, w.g, w.idx(8 * nb)));
    Value channel0 = mul(b, w.t, d / 4);
    Value at = q.linearize(b, {bi, head, query, channel0});
    Type element = qType.getElementType();
    Value row =
        vector::LoadOp::create(b, vec(element), q.buffer, ValueRange{at},
                               /*nontemporal=*/false, laneAlign(element));
    // The mma takes f16 (as the decode kernel, bf16 and f32 round to it;
    // int8 codes are exact, their block scale applies to the scores). With
    // a scale per channel, which a dot product cannot factor out, a query is
    // its f32 value q8 * s rounded to f16, as a float query is.
    if (channelScales) {
      const FlatTensor &qs = w.tensor(scales);
      int64_t block = op.getQStage1Attr().getBlock();
      Type scaleType = cast<ShapedType>(scales.getType()).getElementType();
      Value scaleRow = vector::LoadOp::create(
          b, vec(scaleType), qs.buffer,
          ValueRange{
              qs.linearize(b, {bi, head, div(b, query, block), channel0})},
          /*nontemporal=*/false, laneAlign(scaleType));
      if (!scaleType.isF32())
        scaleRow = arith::ExtFOp::create(b, vec(b.getF32Type()), scaleRow);
      row = arith::MulFOp::create(
          b, arith::SIToFPOp::create(b, vec(b.getF32Type()), row), scaleRow);
      element = b.getF32Type();
    } else if (element.isInteger(8)) {
      row = arith::SIToFPOp::create(b, vec(b.getF16Type()), row);
    }
    if (element.isBF16())
      row = arith::ExtFOp::create(b, vec(b.getF32Type()), row);
    if (!element.isF16() && !element.isInteger(8))
      row = arith::TruncFOp::create(b, vec(b.getF16Type()), row);
    for (auto [lo, hi] : w.channels.keyPairs)
      regs.push_back(
          vector::ShuffleOp::create(b, row, row, ArrayRef<int64_t>{lo, hi}));
  }
  // Two pairs per B fragment: k columns 2t, 2t + 1 and 2t + 8, 2t + 9.
  Regs frags;
  for (size_t i = 0; i < regs.size(); i += 2)
    frags.push_back(fragment(b, {regs[i], regs[i + 1]}));
  // BPQ queries: the stage-1 scale of each row the scores hold (rows 2t + c
  // of each row block), after the fragments.
  if (scales && !channelScales) {
    const FlatTensor &qs = w.tensor(scales);
    int64_t block = op.getQStage1Attr().getBlock();
    for (int64_t nb = 0; nb < w.rowBlocks; ++nb)
      for (int64_t c = 0; c < 2; ++c) {
        auto [head, query] = pairAt(w.accRow(nb, c));
        Value at = qs.linearize(b, {bi, head, div(b, query, block)});
        frags.push_back(
            toF32(b, memref::LoadOp::create(b, qs.buffer, ValueRange{at})));
      }
  }
  w.tiles[op.getTile()] = frags;
}

void mlir::qattn::tiles::lowerLoadKVTile(WarpProgram &w, LoadKVTileOp op) {
  ImplicitLocOpBuilder &b = w.b;
  int64_t d = w.headDim;
  FragmentLayout layout = *op.getLayout();
  bool keys = layout == FragmentLayout::mma_keys_a;
  Value bi = w.scalar(op.getBatch()), hk = w.scalar(op.getKvHead());
  Value first = w.scalar(op.getFirst()), bound = w.scalar(op.getBound());
  ValueRange sources = op.getSources();
  ResultRange results = op.getTile();
  // The lane's channels: lane t's d/4 of K, lane g's d/8 of V.
  int64_t laneChannels = keys ? d / 4 : d / 8;
  Value channel0 = mul(b, keys ? w.t : w.g, laneChannels);

  Stage1Attr s1 = op.getStage1Attr();
  Stage2Attr s2 = op.getStage2Attr();
  // The tile's first key (safe when the tile lies past the end): its
  // group constants and stage-1 scale hold for the whole tile. The decode
  // buffer [B, Hkv, Nb, d] has the layout of stage-1 data [entries, Hkv, P,
  // d], batch entries for pages.
  int64_t rowsDim = s2 ? 1 : 2;
  KeyPlace head = locate(w, op, bi, first, bound, rowsDim);
  int64_t rows =
      cast<RankedTensorType>(sources[0].getType()).getDimSize(rowsDim);
  bool wholeTiles = op.getPageTable() ||
                    (!ShapedType::isDynamic(rows) && rows % op.getKeys() == 0);
  // The pieces of each result (their sizes: tilePieceBytes, which the ring
  // is planned by), then loaded into registers or copied into the ring
  // (TileRing.cpp).
  SmallVector<SmallVector<int64_t>> bytes =
      tilePieceBytes(op, d, w.codeBits(keys));
  int64_t codeBytes = bytes[0].front();
  SmallVector<SmallVector<TilePiece>> pieces(results.size());
  auto words = [&](int64_t bytes) {
    return VectorType::get({std::max<int64_t>(bytes / 4, 1)}, b.getI32Type());
  };
  // Byte `channel` of key k's codes (k from the tile's first key): stage
  // 1's data [entries, Hkv, P, d], stage 2's codes [entries, P, R] (the
  // head's bytes from headStart). A lane's pieces start at its channels; the
  // ring's copies of whole rows (TileRing.cpp) at the head's first byte.
  const FlatTensor &codes = w.tensor(sources[0]);
  Value headStart = s2 ? headCodeByte(w, s2, hk) : w.idx(0);
  // Codes that start inside a byte or a 3-bit group are read from the one
  // holding the lane's first code, then shifted (laneCodesOf).
  LaneCodes laneCodes = laneCodesOf(d, keys, w.codeBits(keys));
  bool shifted = s2 && laneCodes.shifted;
  Value laneStart =
      !s2 ? channel0
          : add(b, headStart,
                shifted ? laneCodeByte(b, laneCodes, keys ? w.t : w.g)
                        : mul(b, keys ? w.t : w.g, codeBytes));
  auto codeAt = [&w, &codes, head, first, bound, wholeTiles, hk,
                 stage2 = static_cast<bool>(s2)](Value k, Value channel) {
    KeyPlace at = keyOfTile(w, head, first, k, bound, wholeTiles);
    return stage2 ? codes.linearize(w.b, {at.entry, at.row, channel})
                  : codes.linearize(w.b, {at.entry, hk, at.row, channel});
  };
  std::function<Value(Value)> keyRow = [codeAt, headStart](Value k) {
    return codeAt(k, headStart);
  };
  int64_t rowBytes = s2 ? d * w.codeBits(keys) / 8 : d;
  // Where every key of the tile has its own row, the lane's keys lie a
  // constant number of rows from its first one.
  Value keyStride = wholeTiles ? codes.stride(b, s2 ? 1 : 2) : Value();
  SmallVector<LaneKey> lane = laneKeys(w, layout, op.getKeys());
  Value laneFirst = keyStride ? codeAt(lane.front().first, laneStart) : Value();
  for (LaneKey key : lane) {
    Value at =
        keyStride
            ? add(b, laneFirst,
                  b.createOrFold<arith::MulIOp>(keyStride, w.idx(key.offset)))
            : codeAt(add(b, key.first, w.idx(key.offset)), laneStart);
    TilePiece piece{&codes,  at,    codeBytes, words(codeBytes),
                    Value(), false, keyRow,    rowBytes};
    piece.keyRowStride = keyStride;
    pieces[0].push_back(piece);
  }
  // The row of the k-th stage-2 group, or stage-1 block, of `unit` keys of
  // the tile (groups of 16 keys in tiles of 32: two; of 8 in tiles of 16:
  // two). Where rows are not whole tiles, one that starts past `bound` may
  // lie past the tensor's last (1000 keys: 63 groups of 16, the tile of 32
  // at key 992 names a 64th): it reads the tile's first one (its keys are
  // masked).
  DenseMap<int64_t, Value> firstOfUnit;
  auto unitOfTile = [&](int64_t unit, int64_t k) {
    Value &base = firstOfUnit[unit];
    if (!base)
      base = div(b, head.row, unit);
    Value row = add(b, base, w.idx(k));
    if (wholeTiles || k == 0)
      return row;
    Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                        add(b, first, w.idx(k * unit)), bound);
    return Value(arith::SelectOp::create(b, valid, row, base));
  };
  // The block or group of `unit` keys holding the lane's key 8k on in the
  // tile (g + 8k for K and the scales, 2t + 8k for V's constants:
  // `valueKeys`; hasLaneScales, hasLaneGroups); a key past `bound` reads the
  // tile's first.
  auto laneUnit = [&](int64_t unit, bool valueKeys, int64_t k) {
    Value &base = firstOfUnit[unit];
    if (!base)
      base = div(b, head.row, unit);
    Value key = add(b, valueKeys ? mul(b, w.t, 2) : w.g, w.idx(8 * k));
    Value row = div(b, add(b, head.row, key), unit);
    if (wholeTiles)
      return row;
    Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                        add(b, first, key), bound);
    return Value(arith::SelectOp::create(b, valid, row, base));
  };
  if (s2) {
    // The constants of each stage-2 group of the tile, or of each group of
    // the lane's keys of each half of a key block (hasLaneGroups).
    bool laneGroups = hasLaneGroups(s2);
    for (int64_t part : {2, 3}) {
      const FlatTensor &consts = w.tensor(sources[part]);
      for (auto [k, pieceBytes] : llvm::enumerate(bytes[part - 1])) {
        Value row = laneGroups ? laneUnit(s2.getGroup(), !keys, k)
                               : unitOfTile(s2.getGroup(), k);
        TilePiece piece{&consts,
                        consts.linearize(b, {head.entry, hk, row, channel0}),
                        pieceBytes, words(pieceBytes),
                        consts.linearize(b, {head.entry, hk, row, w.idx(0)})};
        piece.rowBytes = d;
        pieces[part - 1].push_back(piece);
      }
    }
  }
  // One scale per tile (or per stage-1 block of the tile where blocks are
  // shorter; per lane key where they do not fit it): the buffer's of its
  // sequence and head [B, Hkv], or the stage-1 block's [entries, Hkv,
  // P/block]; or, per channel [entries, Hkv, P/block, d], the warp's row of
  // them, of which the lane holds its channels' (read as words).
  const FlatTensor &scales = w.tensor(sources[1]);
  bool laneScales = hasLaneScales(op);
  for (auto [k, pieceBytes] : llvm::enumerate(bytes.back())) {
    SmallVector<Value> idx = {head.entry, hk};
    // Scales per block apply to the scores and terms of keys g + 8h, per
    // channel to the fragments (V's of keys 2t + 8h).
    if (laneScales)
      idx.push_back(laneUnit(s1.getBlock(), !keys && hasChannelScales(op), k));
    else if (s1)
      idx.push_back(unitOfTile(s1.getBlock(), k));
    if (hasChannelScales(op)) {
      auto at = [&](Value channel) {
        SmallVector<Value> full = idx;
        full.push_back(channel);
        return scales.linearize(b, full);
      };
      TilePiece piece{&scales, at(channel0), pieceBytes, words(pieceBytes),
                      at(w.idx(0))};
      piece.rowBytes = channelScaleRowBytes(op, d);
      pieces.back().push_back(piece);
    } else {
      pieces.back().push_back({&scales, scales.linearize(b, idx), pieceBytes,
                               b.getF32Type(), Value(), /*once=*/!laneScales});
    }
  }

  if (w.ringLoads.contains(op)) {
    copyToRing(w, op, pieces);
    return;
  }
  // Register loads, 3-bit codes widened to 4 bits (at d = 64 always: a
  // lane's 6 or 3 bytes are no cp.async size, and their rows of 24 bytes no
  // whole 16-byte copies).
  bool widen = s2 && w.codeBits(keys) == 3;
  for (auto [result, resultPieces] : llvm::zip(results, pieces)) {
    Regs regs;
    for (const TilePiece &piece : resultPieces) {
      if (piece.type.isF32()) {
        regs.push_back(toF32(b, memref::LoadOp::create(b, piece.tensor->buffer,
                                                       ValueRange{piece.at})));
        continue;
      }
      bool codes = result == results[0];
      // Shifted pieces start at any byte.
      Value words = loadBytes(w, *piece.tensor, piece.at, piece.bytes,
                              codes && shifted ? 1 : 0);
      if (widen && codes)
        words = widenThreeBitCodes(b, words, piece.bytes, s2.getOrder());
      if (codes && !keys && s2 &&
          readsLsbFirst(d, w.codeBits(keys), s2.getOrder()))
        words = reverseCodesInBytes(b, words, w.codeBits(keys));
      if (codes && shifted)
        words = shiftWordsDown(b, words,
                               laneCodeShift(b, laneCodes, keys ? w.t : w.g));
      // K codes that end in a half word (2-bit at d = 96, 4-bit and 3-bit
      // at d = 80) or a byte (2-bit at d = 80), as keyPairs reads them.
      int64_t tail = laneChannels * w.regBits(keys) % 32;
      if (codes && keys && s2 && tail == 16)
        words = spreadHalfWord(b, words);
      else if (codes && keys && s2 && tail == 8)
        words = spreadByte(b, words);
      regs.push_back(words);
    }
    w.tiles[result] = std::move(regs);
  }
}

SmallVector<SmallVector<int64_t>>
mlir::qattn::tiles::tilePieceBytes(LoadKVTileOp op, int64_t headDim,
                                   int64_t bits) {
  bool keys = op.getLayout() == FragmentLayout::mma_keys_a;
  int64_t laneChannels = keys ? headDim / 4 : headDim / 8;
  int64_t laneKeys = (keys ? 2 : 4) * (op.getKeys() / kKeyBlock);
  SmallVector<SmallVector<int64_t>> bytes;
  if (Stage2Attr s2 = op.getStage2Attr()) {
    int64_t codeBytes = laneCodesOf(headDim, keys, bits).bytes;
    // One piece of constants per stage-2 group of the tile (per half of a
    // key block where the lane's keys' groups differ by lane).
    int64_t groups = tileConstantSets(s2, op.getKeys(), op.getTile()[1]);
    bytes.push_back(SmallVector<int64_t>(laneKeys, codeBytes));
    bytes.push_back(SmallVector<int64_t>(groups, laneChannels));
    bytes.push_back(SmallVector<int64_t>(groups, laneChannels));
  } else {
    bytes.push_back(SmallVector<int64_t>(laneKeys, laneChannels));
  }
  // The tile's stage-1 scale (one per block of 8 keys where blocks are
  // shorter), or the lane's channels' scales (of each block).
  auto scales = cast<ShapedType>(op.getSources()[1].getType());
  int64_t scaleBytes = scales.getElementTypeBitWidth() / 8;
  bytes.push_back(SmallVector<int64_t>(
      tileScaleCount(op),
      hasChannelScales(op) ? laneChannels * scaleBytes : scaleBytes));
  return bytes;
}

bool mlir::qattn::tiles::hasChannelScales(LoadKVTileOp op) {
  Stage1Attr s1 = op.getStage1Attr();
  return s1 && s1.getGranularity() == Granularity::channel;
}

bool mlir::qattn::tiles::hasLaneScales(LoadKVTileOp op) {
  Stage1Attr s1 = op.getStage1Attr();
  if (!s1)
    return false;
  int64_t block = s1.getBlock();
  bool fits = unitFitsTile(block, op.getKeys());
  // Scales per channel multiply V's fragment pairs of keys 2t, 2t + 1: one
  // block for both.
  bool paired =
      op.getLayout() == FragmentLayout::mma_values_a && hasChannelScales(op);
  return !fits && (!paired || block % 2 == 0);
}

bool mlir::qattn::tiles::hasLaneGroups(Stage2Attr s2) {
  return s2 && tileGpuGroupsPerLane(s2.getGroup());
}

int64_t mlir::qattn::tiles::tileConstantSets(Stage2Attr s2, int64_t tileKeys,
                                             Value constants) {
  return hasLaneGroups(s2) ? 2 * tileKeys / kKeyBlock : tileGroups(constants);
}

int64_t mlir::qattn::tiles::tileScaleCount(LoadKVTileOp op) {
  Stage1Attr s1 = op.getStage1Attr();
  int64_t keys = op.getKeys();
  if (hasLaneScales(op))
    return 2 * keys / kKeyBlock;
  return s1 && s1.getBlock() < keys ? keys / s1.getBlock() : 1;
}

int64_t mlir::qattn::tiles::channelScaleRowBytes(LoadKVTileOp op,
                                                 int64_t headDim) {
  auto scales = cast<ShapedType>(op.getSources()[1].getType());
  return headDim * scales.getElementTypeBitWidth() / 8;
}
