//===- TileRing.cpp - the pipelined key loops' shared-memory ring ---------===//
//
// Part of the qattn project.
//
// A look-ahead load of a pipelined key loop (qattn-pipeline) that went
// straight into registers would have to stay in flight while the warp holds
// the tile it computes on: at 168 registers ptxas cannot keep both, sinks the
// loads to the loop's end and then waits for them there (H200, B8 N32K d128
// 4-bit: 35% of the warps' stall samples on those loads). Instead each lane
// copies the bytes of its fragments with cp.async into its own part of a ring
// slot in shared memory: qattn.wait_tiles waits for the copies of the tile it
// names (cp.async.wait_group) and reads them back into registers. Each lane
// reads only what it copied itself, so no barrier is needed; but a stage-2
// tile's group constants, which 8 (K) or 4 (V) lanes would each copy, are
// copied once per warp as rows, and read after a warp barrier where the warp
// converts them (TileConstants.cpp); and the tile's stage-1 scale, the same
// 4 bytes for all lanes, is copied by lane 0 alone (32 copies of one word
// took 32 shared-memory wavefronts each: on the H200, B8 N32K d128, 38% of
// the kernel's cp.async wavefronts) and read by all after a warp barrier
// that follows the wait; another barrier before the copies into a slot
// keeps them after every lane's reads of the tile that was there.
//
// A ring stream is one loop's loads of a cache operand (its prologue's and
// its look-ahead loads, of one first source and layout): a region
// of `depth` slots (qattn.wait_tiles' pending + 1), the tile whose first key
// is f in slot (f / keys) mod depth, so the depth tiles in flight have
// distinct slots and a copy only reuses the slot of a tile already read.
// Within a slot, the pieces lie in order, piece p of each lane at (the bytes
// of the pieces before it) + lane * (its bytes): a warp's accesses to one
// piece are contiguous, free of bank conflicts; a row takes d bytes. Where a
// lane's codes of a key are fewer than the 16 bytes a copy moves at its best
// (V at 4 and 8 bytes, K at 8), the tile's code rows lie in key order
// instead, swizzled, copied 16 bytes a lane, and each lane reads its keys'
// pieces from them after the wait's warp barrier (pieces that no copy size
// takes, likewise, unswizzled: the swizzle's 32-byte units would split them:
// 3-bit codes' 12 and 6 bytes at d = 128, widened to 4 bits as they are read;
// 4-bit codes' 12 and 6 and int8's 24 and 12 at d = 96). Loops run
// one after the other, so their streams share the ring's bytes: a loop drains
// its copies when it ends.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/LoweringUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

/// The ring bytes of a piece copied once per warp: 16-byte aligned.
static int64_t onceBytes(int64_t bytes) { return llvm::alignTo(bytes, 16); }

void mlir::qattn::tiles::warpSync(WarpProgram &w) {
  NVVM::SyncWarpOp::create(w.b, i32Const(w.b, -1));
}

/// Bytes of a ring slot for a tile of `op` at code width `bits`: each
/// lane's pieces and, for a stage-2 tile, its group constants' two rows (s2,
/// z2) of `headDim` bytes per group once; or 0 where a lane's piece is not a
/// size cp.async copies (4, 8 or 16 bytes, or a multiple of 16) and the load
/// stays a register load.
static int64_t ringSlotBytes(LoadKVTileOp op, int64_t headDim, int64_t bits) {
  SmallVector<SmallVector<int64_t>> pieces = tilePieceBytes(op, headDim, bits);
  Stage2Attr s2 = op.getStage2Attr();
  bool rows = static_cast<bool>(s2);
  // Register loads: codes a lane shifts after the load (laneCodesOf, which
  // start at any byte), and the lane's own rows of group constants
  // (hasLaneGroups) or of scales per channel (hasLaneScales), which no warp
  // row holds.
  if ((rows &&
       laneCodesOf(headDim, op.getLayout() == FragmentLayout::mma_keys_a, bits)
           .shifted) ||
      hasLaneGroups(s2) || (hasChannelScales(op) && hasLaneScales(op)))
    return 0;
  int64_t sum = rows ? 2 * headDim * static_cast<int64_t>(pieces[1].size()) : 0;
  auto copied = [](int64_t bytes) {
    return bytes == 4 || bytes == 8 || bytes % 16 == 0;
  };
  // The scales, the last pieces, each once (16 bytes keep the slots
  // aligned), or each the warp's row of scales per channel, or each lane's
  // own (blocks that do not fit the tile: hasLaneScales).
  int64_t scale = pieces.back().front(), scales = pieces.back().size();
  if (hasChannelScales(op))
    sum += scales * channelScaleRowBytes(op, headDim);
  else if (!copied(scale))
    return 0;
  else if (hasLaneScales(op))
    sum += scales * kThreadsPerWarp * scale;
  else
    sum += scales * onceBytes(scale);
  // Code pieces no copy size (a lane's 12 or 6 bytes of 3-bit codes at d =
  // 128, of 4-bit codes at d = 96; 24 and 12 of int8 at d = 96) go as the
  // tile's code rows where a row is whole 16-byte copies (copiedAsRows) and
  // a lane reads its piece as words (readPiece); else (2 bytes: 2-bit V
  // at d = 64) as register loads.
  int64_t rowBytes = rows ? headDim * bits / 8 : headDim;
  auto asRows = [&](int64_t bytes) {
    return rowBytes % 16 == 0 && (bytes % 4 == 0 || bytes == 6);
  };
  for (auto [i, result] : llvm::enumerate(ArrayRef(pieces).drop_back())) {
    if (rows && (i == 1 || i == 2))
      continue;
    for (int64_t bytes : result) {
      if (!copied(bytes) && !(i == 0 && asRows(bytes)))
        return 0;
      sum += kThreadsPerWarp * bytes;
    }
  }
  return sum;
}

/// A ring slot that holds a tile of `op` at each of its heads' code widths
/// (the largest), or 0 where one of them stays a register load.
static int64_t ringSlotBytes(LoadKVTileOp op, int64_t headDim) {
  Stage2Attr s2 = op.getStage2Attr();
  if (!s2)
    return ringSlotBytes(op, headDim, 0);
  int64_t slot = 0;
  for (int64_t bits : s2.getBits()) {
    int64_t bytes = ringSlotBytes(op, headDim, bits);
    if (!bytes)
      return 0;
    slot = std::max(slot, bytes);
  }
  return slot;
}

int64_t mlir::qattn::tiles::planRing(WarpProgram &w, scf::ForallOp grid) {
  int64_t ringBytes = 0;
  grid.getBody()->walk([&](scf::ForOp loop) {
    auto waits = loop.getBody()->getOps<WaitTilesOp>();
    if (waits.empty())
      return;
    int64_t depth = (*waits.begin()).getPending() + 1;
    // The loop's look-ahead loads and, in its init args, its prologue's.
    SmallVector<LoadKVTileOp> loads(loop.getBody()->getOps<LoadKVTileOp>());
    for (Value init : loop.getInitArgs())
      if (auto load = init.getDefiningOp<LoadKVTileOp>();
          load && !llvm::is_contained(loads, load))
        loads.push_back(load);
    int64_t offset = 0, ringLoads = 0;
    // K and V may read the same tensors: a stream is a source and a layout.
    DenseMap<std::pair<Value, unsigned>, RingStream> streams;
    for (LoadKVTileOp load : loads) {
      // The decode buffer's loop holds a page's tiles at most: registers.
      int64_t slot = load.getStage1Attr() ? ringSlotBytes(load, w.headDim) : 0;
      if (!slot)
        continue;
      // Every slot on a 128-byte line: a copy whose ring bytes sit off the
      // line of its global bytes takes more shared-memory wavefronts and L2
      // sectors (H200, B8 N32K d128: slots of 2576 bytes, the second 16 bytes
      // off, gave the code copies 14-16 wavefronts for 4 and 24 L2 sectors
      // for 16), and the code rows' swizzle assumes line-aligned slots.
      slot = llvm::alignTo(slot, kRingLineBytes);
      auto [stream, added] = streams.try_emplace(
          std::make_pair(load.getSources()[0],
                         static_cast<unsigned>(*load.getLayout())),
          RingStream{offset, slot, depth});
      if (added)
        offset += depth * slot;
      w.ringLoads[load] = stream->second;
      if (load->getParentOp() == loop)
        ++ringLoads;
    }
    // A loop unrolled by qattn-pipeline (static-slots) waits once per step.
    w.ringLoadsPerStep[loop] =
        ringLoads / std::max<int64_t>(1, llvm::range_size(waits));
    ringBytes = std::max(ringBytes, offset);
  });
  // After the slots, the staging areas of the stage-2 tiles' group
  // constants (TileConstants.cpp): 4d bytes per group of a tile, for K and
  // V.
  int64_t keyGroups = 0, valueGroups = 0;
  grid.getBody()->walk([&](LoadKVTileOp load) {
    if (!load.getStage2Attr() || !w.ringLoads.contains(load))
      return;
    int64_t groups = tileGroups(load.getTile()[1]);
    int64_t &most = load.getLayout() == FragmentLayout::mma_keys_a
                        ? keyGroups
                        : valueGroups;
    most = std::max(most, groups);
  });
  for (auto [groups, area] : {std::pair(keyGroups, &w.keyConstants),
                              std::pair(valueGroups, &w.valueConstants)})
    if (groups) {
      *area = ringBytes;
      ringBytes += 4 * w.headDim * groups;
    }
  return ringBytes;
}

/// Bytes per element of `buffer`.
static int64_t elementBytes(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getElementTypeBitWidth() / 8;
}

/// Where byte `rel` of a tile's code rows sits in the ring: the 32-byte
/// quarters of each 128-byte line xor'ed with the line's index mod 4, so
/// that the lanes' reads of keys 2t + dj (V) or g (K) from rows 32 or 64
/// bytes long fall in distinct banks.
static Value swizzleRows(ImplicitLocOpBuilder &b, Value rel) {
  Value line = rem(b, div(b, rel, 128), 4);
  return arith::XOrIOp::create(b, rel, mul(b, line, 32));
}

/// Where byte `rel` of a tile's code rows sits: swizzled, but for rows
/// whose lane pieces (of 6, 12 or 24 bytes) would straddle 32-byte units.
static Value rowsByte(ImplicitLocOpBuilder &b, Value rel, bool unswizzled) {
  return unswizzled ? rel : swizzleRows(b, rel);
}

/// The swizzle repeats every 4 lines: swizzleRows(rel + n * kSwizzlePeriod)
/// = swizzleRows(rel) + n * kSwizzlePeriod, so that a lane's pieces of
/// rows a multiple of it apart are a constant apart.
static constexpr int64_t kSwizzlePeriod = 4 * 128;

/// Whether the code pieces `pieces` are copied as the tile's rows in key
/// order: a lane's piece is narrower than a 16-byte copy, or not whole
/// ones, and a row is whole 16-byte copies.
static bool copiedAsRows(ArrayRef<TilePiece> pieces) {
  const TilePiece &p = pieces.front();
  return p.keyRow && (p.bytes < 16 || p.bytes % 16 != 0) &&
         p.keyRowBytes % 16 == 0;
}

Value mlir::qattn::tiles::ringLaneByte(WarpProgram &w, Value slot,
                                       const RingTile::Piece &piece,
                                       Value lane) {
  if (piece.once)
    return add(w.b, slot, w.idx(piece.offset));
  if (piece.keyRowBytes) {
    bool keys = piece.layout == FragmentLayout::mma_keys_a;
    LaneKey key = laneKeyOf(w, piece.layout, piece.index);
    // The whole swizzle periods of the key's offset are a constant.
    int64_t ahead = key.offset * piece.keyRowBytes;
    int64_t whole =
        piece.unswizzled ? ahead : ahead / kSwizzlePeriod * kSwizzlePeriod;
    Value rel = add(w.b, mul(w.b, key.first, piece.keyRowBytes),
                    add(w.b, mul(w.b, keys ? w.t : w.g, piece.bytes),
                        w.idx(ahead - whole)));
    return add(w.b, add(w.b, slot, rowsByte(w.b, rel, piece.unswizzled)),
               w.idx(piece.offset + whole));
  }
  return add(w.b, slot,
             add(w.b, w.idx(piece.offset), mul(w.b, lane, piece.bytes)));
}

/// Copies the tile's code rows (`pieces`, the lanes' code pieces of `op`)
/// in key order, 16 bytes a lane at a time, to byte `offset` of `slot`: a
/// lane's 4 or 8 bytes a key cost as many shared-memory wavefronts as 16
/// (on the H200, B8 N32K d128 V at 8 bytes, 8 per copy where 2 would do).
/// Adds the pieces, which each lane reads from the rows after the wait, to
/// `tile`; returns the offset past the rows.
static int64_t copyCodeRows(WarpProgram &w, LoadKVTileOp op, Value slot,
                            int64_t offset, ArrayRef<TilePiece> pieces,
                            RingTile &tile) {
  ImplicitLocOpBuilder &b = w.b;
  const TilePiece &first = pieces.front();
  int64_t rowBytes = first.keyRowBytes, perRow = rowBytes / 16;
  bool keys = op.getLayout() == FragmentLayout::mma_keys_a;
  Stage2Attr s2 = op.getStage2Attr();
  bool threeBit = s2 && w.codeBits(keys) == 3;
  bool unswizzled = 32 % first.bytes != 0;
  Value base = add(b, slot, w.idx(offset));
  int64_t elementSize = elementBytes(first.tensor->buffer);
  auto copyChunk = [&](Value src, Value dst) {
    copyAsync(b, byteAddress(b, w.ring, dst, b.getI32Type()),
              byteAddress(b, first.tensor->buffer, src, b.getI64Type()), 16,
              /*l2Line=*/true, /*ordered=*/true);
  };
  int64_t chunks = op.getKeys() * perRow;
  if (!first.keyRowStride || kThreadsPerWarp % perRow != 0) {
    spreadOver(b, w.lane, kThreadsPerWarp, chunks, [&](Value c) {
      Value src = add(b, mul(b, first.keyRow(div(b, c, perRow)), elementSize),
                      mul(b, rem(b, c, perRow), 16));
      copyChunk(src, add(b, base, rowsByte(b, mul(b, c, 16), unswizzled)));
    });
  } else {
    // Chunk lane + 32j is chunk `lane` of the rows 32j / perRow keys on, at
    // 512j bytes on in the ring (a whole swizzle period): each copy's
    // addresses are the first's plus constants.
    Value src0 =
        add(b, mul(b, first.keyRow(div(b, w.lane, perRow)), elementSize),
            mul(b, rem(b, w.lane, perRow), 16));
    Value dst0 = add(b, base, rowsByte(b, mul(b, w.lane, 16), unswizzled));
    Value rowBytesApart = mul(b, first.keyRowStride, elementSize);
    static_assert(kThreadsPerWarp * 16 % kSwizzlePeriod == 0);
    spreadOverRounds(
        b, w.lane, kThreadsPerWarp, chunks, [&](Value, int64_t at) {
          copyChunk(add(b, src0, mul(b, rowBytesApart, at / perRow)),
                    add(b, dst0, w.idx(at * 16)));
        });
  }
  for (auto [i, piece] : llvm::enumerate(pieces))
    tile.pieces.push_back({offset, piece.bytes, piece.type, 0, false, rowBytes,
                           static_cast<int64_t>(i), *op.getLayout(), unswizzled,
                           threeBit,
                           s2 ? s2.getOrder() : PackOrder::lsb_first});
  return offset + op.getKeys() * rowBytes;
}

/// Copies `piece` to byte `offset` of `slot` (lane 0 alone where it is
/// `once`, 16 bytes a lane where it is the warp's row, else each lane its
/// own, in lane order; `codes` asks L2 for whole lines) and adds it to
/// `tile`; returns the offset past it.
static int64_t copyPiece(WarpProgram &w, Value slot, int64_t offset,
                         const TilePiece &piece, bool codes, RingTile &tile) {
  ImplicitLocOpBuilder &b = w.b;
  if (piece.once) {
    Value to =
        byteAddress(b, w.ring, add(b, slot, w.idx(offset)), b.getI32Type());
    Value from = byteAddress(
        b, piece.tensor->buffer,
        mul(b, piece.at, elementBytes(piece.tensor->buffer)), b.getI64Type());
    spreadOver(b, w.lane, kThreadsPerWarp, 1, [&](Value) {
      copyAsync(b, to, from, piece.bytes, /*l2Line=*/false,
                /*ordered=*/true);
    });
    tile.pieces.push_back({offset, piece.bytes, piece.type, 0, /*once=*/true});
    return offset + onceBytes(piece.bytes);
  }
  if (piece.row) {
    // The warp's row, 16 bytes per lane.
    Value base = add(b, slot, w.idx(offset));
    spreadOver(b, w.lane, kThreadsPerWarp, piece.rowBytes / 16, [&](Value c) {
      Value at = mul(b, c, 16);
      Value src =
          add(b, mul(b, piece.row, elementBytes(piece.tensor->buffer)), at);
      copyAsync(b, byteAddress(b, w.ring, add(b, base, at), b.getI32Type()),
                byteAddress(b, piece.tensor->buffer, src, b.getI64Type()), 16,
                /*l2Line=*/false, /*ordered=*/true);
    });
    tile.pieces.push_back({offset, piece.bytes, piece.type, piece.rowBytes});
    return offset + piece.rowBytes;
  }
  Value dst = ringLaneByte(w, slot, {offset, piece.bytes, Type()}, w.lane);
  for (int64_t part = 0; part < piece.bytes; part += 16) {
    // The codes' rows ask L2 for their whole 128-byte line, whose other
    // half (the next head's codes) another warp reads about now, as the
    // decode kernel's ring does (H200, B8 N32K d128 4-bit: 142.7 ->
    // 135.6 us).
    Value src = add(b, mul(b, piece.at, elementBytes(piece.tensor->buffer)),
                    w.idx(part));
    Value to = byteAddress(b, w.ring, add(b, dst, w.idx(part)), b.getI32Type());
    Value from = byteAddress(b, piece.tensor->buffer, src, b.getI64Type());
    copyAsync(b, to, from, std::min<int64_t>(piece.bytes - part, 16),
              /*l2Line=*/codes, /*ordered=*/true);
  }
  tile.pieces.push_back({offset, piece.bytes, piece.type});
  return offset + kThreadsPerWarp * piece.bytes;
}

/// The first byte of the slot of `stream` that qattn-pipeline fixed on
/// `op` (`qattn.ring_slot`, static-slots), or null.
static Value fixedSlot(WarpProgram &w, Operation *op,
                       const RingStream &stream) {
  auto fixed = op->getAttrOfType<IntegerAttr>(kRingSlotAttr);
  return fixed ? w.idx(stream.offset + fixed.getInt() * stream.slotBytes)
               : Value();
}

void mlir::qattn::tiles::copyToRing(WarpProgram &w, LoadKVTileOp op,
                                    ArrayRef<SmallVector<TilePiece>> pieces) {
  ImplicitLocOpBuilder &b = w.b;
  const RingStream &stream = w.ringLoads.find(op)->second;
  // The slot qattn-pipeline fixed (static-slots), else the tile's by its
  // first key.
  Value slot = fixedSlot(w, op, stream);
  if (!slot) {
    Value tileIndex = div(b, w.scalar(op.getFirst()), op.getKeys());
    slot = add(b, w.idx(stream.offset),
               mul(b, rem(b, tileIndex, stream.depth), stream.slotBytes));
  }
  // Every lane is done reading what other lanes copied into the slot for
  // its last tile (its scale, its scales per channel or its code rows)
  // before they overwrite it.
  warpSync(w);
  int64_t offset = 0;
  for (auto [result, resultPieces] : llvm::zip(op.getTile(), pieces)) {
    RingTile tile;
    if (result == op.getTile()[0] && copiedAsRows(resultPieces)) {
      offset = copyCodeRows(w, op, slot, offset, resultPieces, tile);
    } else {
      for (const TilePiece &piece : resultPieces)
        offset = copyPiece(w, slot, offset, piece,
                           /*codes=*/result == op.getTile()[0], tile);
    }
    tile.stream = stream;
    w.tiles[result] = {slot};
    w.inRing[result] = std::move(tile);
  }
  inlineAsm(b, Type(), {}, "cp.async.commit_group;", "~{memory}");
}

/// A lane's piece of `bytes` at ring byte `byte`, aligned as a lane's
/// place in its part of the slot or in whole rows aligns it (to the largest
/// power of 2 dividing `bytes`): a multiple of 4 bytes as as many words; 6
/// (2-byte aligned: 3-bit codes at d = 128, 4-bit V at d = 96) as 2 words,
/// the low 6 bytes the piece's (the two words that hold it, shifted down by
/// the half-word offset).
static Value readPiece(WarpProgram &w, Value byte, int64_t bytes) {
  ImplicitLocOpBuilder &b = w.b;
  assert((bytes % 4 == 0 || bytes == 6) && "a code piece of whole words, or 6");
  Value words = div(b, byte, 4);
  if (bytes % 4 == 0)
    return vector::LoadOp::create(
        b, VectorType::get({bytes / 4}, b.getI32Type()), w.ring,
        ValueRange{words}, /*nontemporal=*/false,
        llvm::commonAlignment(llvm::Align(16), bytes));
  Value both = vector::LoadOp::create(b, VectorType::get({2}, b.getI32Type()),
                                      w.ring, ValueRange{words},
                                      /*nontemporal=*/false, llvm::Align(4));
  Value lo = vector::ExtractOp::create(b, both, ArrayRef<int64_t>{0});
  Value hi = vector::ExtractOp::create(b, both, ArrayRef<int64_t>{1});
  Value shift = arith::IndexCastOp::create(b, b.getI32Type(),
                                           mul(b, rem(b, byte, 4), 8));
  // (hi:lo) >> shift, shift 0 or 16.
  Value low = LLVM::FshrOp::create(b, hi, lo, shift);
  Value high = arith::ShRUIOp::create(b, hi, shift);
  return vector::FromElementsOp::create(
      b, VectorType::get({2}, b.getI32Type()), ValueRange{low, high});
}

void mlir::qattn::tiles::lowerWaitTiles(WarpProgram &w, WaitTilesOp op) {
  ImplicitLocOpBuilder &b = w.b;
  bool waited = false;
  for (auto [in, out] : llvm::zip(op.getTiles(), op.getReady())) {
    auto ring = w.inRing.find(in);
    if (ring == w.inRing.end()) {
      // Register loads complete at their first use.
      Regs ready = w.regs(in); // a copy: inserting may move the map
      w.tiles[out] = std::move(ready);
      continue;
    }
    if (!waited) {
      // The copies of the steps after this tile's may stay in flight.
      int64_t perStep = w.ringLoadsPerStep.lookup(op->getParentOp());
      inlineAsm(b, Type(), {},
                "cp.async.wait_group " +
                    std::to_string(op.getPending() * perStep) + ";",
                "~{memory}");
      // Other lanes' copies (every ring tile's scale or row of scales, at
      // least), visible to all.
      warpSync(w);
      waited = true;
    }
    RingTile tile = ring->second; // a copy: inserting may move the map
    Value slot = fixedSlot(w, op, tile.stream);
    if (!slot)
      slot = w.regs(in).front();
    // A lane's pieces are read from the slot at their first use (the codes
    // at their fragments' dequantization); a warp's row is read where it is
    // used (TileConstants.cpp).
    SmallVector<RingTile::Piece> pieces;
    for (const RingTile::Piece &piece : tile.pieces)
      if (!piece.rowBytes)
        pieces.push_back(piece);
    w.setLazy(out, pieces.size(), [=, &w](int64_t i) -> Value {
      ImplicitLocOpBuilder &b = w.b;
      const RingTile::Piece &piece = pieces[i];
      // (K pieces that end in a half word, which keyPairs reads spread, are
      // register loads: their rows of 24 bytes are no whole 16-byte copies.)
      assert((piece.threeBit || piece.layout != FragmentLayout::mma_keys_a ||
              piece.bytes % 4 == 0) &&
             "a K piece from the ring is whole words");
      Value v = readPiece(w, ringLaneByte(w, slot, piece, w.lane), piece.bytes);
      if (piece.threeBit)
        return widenThreeBitCodes(b, v, piece.bytes, piece.order);
      if (piece.type.isF32())
        v = arith::BitcastOp::create(
            b, b.getF32Type(),
            vector::ExtractOp::create(b, v, ArrayRef<int64_t>{0}));
      return v;
    });
    bool rows = llvm::all_of(
        tile.pieces, [](const RingTile::Piece &p) { return p.rowBytes != 0; });
    if (tile.pieces.size() == 1 || rows)
      w.readFromRing[out] = {slot, tile.pieces};
  }
}

void mlir::qattn::tiles::drainRing(WarpProgram &w, scf::ForOp loop) {
  if (w.ringLoadsPerStep.lookup(loop))
    inlineAsm(w.b, Type(), {}, "cp.async.wait_all;", "~{memory}");
}
