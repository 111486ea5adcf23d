//===- TileLowering.h - the tile layer as one warp's registers ---*- C++
//-*-===//
//
// Part of the qattn project.
//
// The GPU lowering of the tile layer. Each point of a decode grid (the
// scf.forall qattn-tile writes) is one warp; its body is rewritten op by op
// into what the warp's lanes compute, every tile-layer value becoming the
// registers one lane holds of it (`Regs`). TileGrid.cpp outlines the grid
// into a kernel and its launch, TileBody.cpp walks its body; one file per
// concern lowers the tile ops:
// TileLoads.cpp (loads into registers), TileDequantize.cpp, TileScores.cpp
// (mma and masks), TileSoftmax.cpp (online softmax and P.V, the partial rows'
// stores), TileCombine.cpp (the split-combine kernel).
//
// Lane l = 4g + t. S^T = K Q^T and O^T += V^T P^T on mma.sync m16n8k16,
// rows (query, head pairs) on the n side in 8-row blocks `nb`:
//   query tile (mma_queries_b): per nb and 16-channel chunk j, the B
//     fragment (vector<2x2xf16>) of row 8 nb + g at lane t's channel pairs
//     2j, 2j + 1 (LaneChannels::keyPairs);
//   key tile (mma_keys_a): per key block and chunk j the A fragment
//     (vector<4x2xf16>) of keys g, g + 8, then the tile's stage-1 scale;
//   value tile (mma_values_a): per key block and 16-channel m tile i the A
//     fragment of V^T (lane g's channels 2i, 2i + 1 of
//     LaneChannels::valueChannels; keys 2t, 2t + 1, 2t + 8, 2t + 9), then
//     the tile's stage-1 scale;
//   scores: per key block, nb, row 2t + c (c = 0, 1) and key g + 8h (h = 0,
//     1) an f32, in base 2 (times log2 e), -inf where masked;
//   row max: per nb and c, in base 2; row sum: per nb and c, the sum over
//     this lane's keys only (the 8 lanes of a column add up at the store);
//   accumulators: per nb and m tile i, the C fragment (vector<2x2xf32>) of
//     O^T, rows 2t + c.
// Loaded tiles keep their bytes as words (see lowerLoadKVTile).
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_CONVERSION_QATTNTOGPU_TILELOWERING_H
#define QATTN_LIB_CONVERSION_QATTNTOGPU_TILELOWERING_H

#include "Dequantize.h"

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Target/Chip.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"

#include <functional>
#include <memory>
#include <tuple>

namespace mlir::qattn::tiles {

using Regs = SmallVector<Value>;

/// Keys per key block and rows per row tile: one mma m (or n) extent. A tile
/// holds one or two key blocks (16 or 32 keys); the layouts below repeat per
/// key block `kb`, outermost.
inline constexpr int64_t kKeyBlock = 16, kTileRows = 16;
/// A shared-memory line: the ring's slots start on one (planRing).
inline constexpr int64_t kRingLineBytes = 128;

/// Which channels a lane holds, fixed for a grid by its cache's stage-2
/// formats (the int8 buffer tiles follow the cache's order): lane t's K
/// channel pairs (local to its d/4 channels) in mma k order, and lane g's V
/// channels (local to its d/8) in m-tile order.
struct LaneChannels {
  SmallVector<std::pair<int64_t, int64_t>> keyPairs;
  SmallVector<int64_t> valueChannels;
};

/// A tensor the grid reads or writes, inside the kernel: a flat buffer and
/// the sizes of the tensor it was (index values).
struct FlatTensor {
  Value buffer;
  SmallVector<Value> sizes;
  /// The linear index of `idx` (row-major).
  Value linearize(ImplicitLocOpBuilder &b, ValueRange idx) const;
  /// The elements from one index of dimension `dim` to the next.
  Value stride(ImplicitLocOpBuilder &b, int64_t dim) const;
};

/// A piece of a K/V tile a lane loads: `bytes` at element `at` of
/// `tensor`'s buffer, read as `type` (vector<bytes/4 x i32>, or f32 for the
/// tile's scale, of the buffer's float type). A stage-2 tile's group
/// constants, and a tile's stage-1 scales per channel, are a row of the
/// warp's (`rowBytes` at element `row`), of which the lane's are a part: the
/// ring copies the row once per warp. A piece that is the same for every
/// lane (`once`: the tile's one stage-1 scale) the ring copies once and every
/// lane reads from one place.
struct TilePiece {
  const FlatTensor *tensor;
  Value at;
  int64_t bytes;
  Type type;
  Value row = Value();
  bool once = false;
  /// For a code piece: the element of key k's codes of this KV head (its
  /// row of `keyRowBytes`), for copies of the tile's rows in order, and the
  /// elements from one key's row to the next where every key of the tile
  /// has its own row (else null).
  std::function<Value(Value)> keyRow = nullptr;
  int64_t keyRowBytes = 0;
  Value keyRowStride = Value();
  /// For a row piece: the row's bytes (a multiple of 16).
  int64_t rowBytes = 0;
};

/// A ring stream's region of the shared-memory ring (TileRing.cpp): its
/// first byte, a slot's bytes (all lanes) and its slots.
struct RingStream {
  int64_t offset, slotBytes, depth;
};

/// A tile in flight in the ring: its registers are the byte of its slot;
/// its pieces, where they lie in it (the byte of the warp's piece; each
/// lane's `bytes` follow in lane order, or the piece is a row of the warp,
/// `rowBytes` once, or `once` the lanes' common `bytes`, or the tile's code
/// rows lie in key order, `keyRowBytes` each, and the piece is the lane's
/// part of its `index`-th key (laneKeyOf)) and what they are read as.
struct RingTile {
  struct Piece {
    int64_t offset, bytes;
    Type type;
    int64_t rowBytes = 0;
    bool once = false;
    int64_t keyRowBytes = 0, index = 0;
    FragmentLayout layout = FragmentLayout::mma_keys_a;
    /// Code rows whose lane pieces a swizzle of 32-byte units would split
    /// (6, 12 or 24 bytes: 3-bit codes at d = 128, 4-bit and int8 at d =
    /// 96): not swizzled.
    bool unswizzled = false;
    /// 3-bit codes, widened to 4 bits as they are read, in `order`.
    bool threeBit = false;
    PackOrder order = PackOrder::lsb_first;
  };
  SmallVector<Piece> pieces;
  /// Its stream, for a slot that qattn-pipeline fixed (`qattn.ring_slot` on
  /// the wait that reads it).
  RingStream stream = {};
};

/// A tile read back from the ring (qattn.wait_tiles) that is one piece, or
/// the warp's rows of group constants (one per stage-2 group of the tile):
/// its slot and its pieces there.
struct RingRead {
  Value slot;
  SmallVector<RingTile::Piece> pieces;
};

/// A tile whose registers are made where they are first used: a
/// dequantized K or V tile makes each A fragment at the mma that takes it
/// (and reads its codes from the ring there), so that a tile's fragments are
/// never all live at once. `made` memoizes (`make` fills it); a register made
/// inside a region that does not enclose a later use is made again there.
struct LazyRegs {
  std::function<Value(int64_t)> make;
  SmallVector<Value> made;
};

/// One warp's program: the values of the grid body it has lowered.
class WarpProgram {
public:
  WarpProgram(ImplicitLocOpBuilder &b, int64_t headDim, int64_t rowBlocks,
              LaneChannels channels);

  ImplicitLocOpBuilder &b;
  int64_t headDim, rowBlocks;
  /// The grid's (query, head) rows per batch entry and KV head (rowBlocks
  /// blocks of 8 hold them, padded).
  int64_t rows = 0;
  LaneChannels channels;
  /// The stage-2 code widths of the KV heads this program serves, K's and
  /// V's (0: no stage-2 tiles), as the cache stores them. A grid over
  /// per-head widths lowers its body once per distinct pair (TileGrid.cpp),
  /// each copy for its heads.
  int64_t keyBits = 0, valueBits = 0;
  Value lane, g, t;
  /// Scalars of the grid body (indices, lengths) and their kernel values.
  IRMapping scalars;
  DenseMap<Value, FlatTensor> tensors;
  /// The page table's entries read so far (table, batch entry, key, bound)
  /// -> (page, row in it): K's and V's tiles of a step share one read.
  DenseMap<std::tuple<Value, Value, Value, Value>, std::pair<Value, Value>>
      pageLookups;
  DenseMap<Value, Regs> tiles;
  /// The lazy tiles (held by pointer: a make() may insert others).
  DenseMap<Value, std::shared_ptr<LazyRegs>> lazy;
  /// The row sums among `tiles` (per lane until stored).
  DenseSet<Value> sums;
  /// The shared-memory ring (memref<? x i32, workgroup>; null without one),
  /// the loads that go through it, their key loops' ring loads per step, and
  /// the tiles in flight in it.
  Value ring;
  DenseMap<Operation *, RingStream> ringLoads;
  DenseMap<Operation *, int64_t> ringLoadsPerStep;
  DenseMap<Value, RingTile> inRing;
  DenseMap<Value, RingRead> readFromRing;
  /// The bytes of the ring where K's and V's group constants are staged
  /// (TileConstants.cpp), or -1 (not staged): 4 headDim bytes per stage-2
  /// group of a tile.
  int64_t keyConstants = -1, valueConstants = -1;

  /// The row (of the row tile) that column c of the S^T and O^T
  /// accumulators of row block nb holds in this lane: 8 nb + 2t + c.
  Value accRow(int64_t nb, int64_t c);
  /// Where the score of key block kb, accumulator row r = 2 nb + c and key
  /// g + 8h sits in a scores tile's registers.
  int64_t scoreAt(int64_t kb, int64_t r, int64_t h) const {
    return (kb * 2 * rowBlocks + r) * 2 + h;
  }

  Value scalar(Value v) const { return scalars.lookupOrNull(v); }
  const FlatTensor &tensor(Value v) const { return tensors.find(v)->second; }
  const Regs &regs(Value tile) const { return tiles.find(tile)->second; }
  /// Register `i` of `tile`, made here if the tile is lazy.
  Value reg(Value tile, int64_t i);
  /// The registers of `tile` (a lazy tile's count).
  int64_t numRegs(Value tile) const;
  /// Makes `tile` lazy: `count` registers, register i made by `make(i)`.
  void setLazy(Value tile, int64_t count, std::function<Value(int64_t)> make);
  /// Whether `v`, made earlier, may be used at the insertion point: it was
  /// made in the insertion block or in one enclosing it.
  bool usableHere(Value v) const;
  /// Index constant.
  Value idx(int64_t v);
  int64_t codeBits(bool keys) const { return keys ? keyBits : valueBits; }
  /// The code width in a lane's registers: 3-bit codes are widened to 4 as
  /// they are loaded (widenThreeBitCodes), so 4 for 3.
  int64_t regBits(bool keys) const {
    return codeBits(keys) == 3 ? 4 : codeBits(keys);
  }
};

/// The stage-2 groups of a tile whose group constants (`[groups, d]`) are
/// `constants`: one, or several where the tile holds whole groups.
inline int64_t tileGroups(Value constants) {
  return cast<RankedTensorType>(constants.getType()).getDimSize(0);
}

/// The 16-key blocks of a tile whose scores (`[16, keys]`) are `scores`.
inline int64_t keyBlocks(Value scores) {
  return cast<RankedTensorType>(scores.getType()).getDimSize(1) / kKeyBlock;
}

/// Of `count` constants that split a tile of `blocks` key blocks evenly
/// (its stage-2 groups, or its stage-1 scales), the one of half `h` (keys
/// 8h to 8h + 7) of key block `kb`: groups and blocks of 8 keys split a
/// key block between a lane's two keys (g, g + 8 of K; 2t, 2t + 1 and 2t +
/// 8, 2t + 9 of V).
inline int64_t constantOfHalf(int64_t kb, int64_t h, int64_t count,
                              int64_t blocks) {
  return (2 * kb + h) * count / (2 * blocks);
}

/// The stage-1 scales of a K/V tile of `op` as registers: one per stage-1
/// block where blocks (of 8 keys) are shorter than the tile, one per half of
/// each key block where they do not fit it (hasLaneScales), else one.
int64_t tileScaleCount(LoadKVTileOp op);
/// Whether stage-1 blocks or stage-2 groups of `unit` keys fit tiles of
/// `tileKeys`: one covers the tile, or the tile holds whole ones of 8 keys or
/// more (a lane's keys in a key block are two halves of 8: constantOfHalf).
inline bool unitFitsTile(int64_t unit, int64_t tileKeys) {
  return unit % tileKeys == 0 || (tileKeys % unit == 0 && unit % 8 == 0);
}
/// Whether stage-2 groups `s2` are shorter than half a key block (2 or 4
/// keys: tileGpuGroupsPerLane), so that a lane loads the constants of the
/// group of its keys of each half of each key block (K's g + 8h, V's 2t + 8h
/// and 2t + 1 + 8h: one group), which constantOfHalf then picks.
bool hasLaneGroups(Stage2Attr s2);
/// The sets of group constants a lane holds of a stage-2 tile of `tileKeys`
/// keys whose constants are `constants` ([groups, d]): one per group of the
/// tile, or one per half of a key block (hasLaneGroups).
int64_t tileConstantSets(Stage2Attr s2, int64_t tileKeys, Value constants);
/// Whether the stage-1 blocks of `op` neither cover its tiles nor split them
/// into halves of key blocks (8 keys or more each; blocks of 1, 2, 4, 12,
/// 24 in 16-key tiles), so that a lane reads the scale (or its channels'
/// scales) of the block of each of its keys of each half of a key block
/// (the halves' scales of constantOfHalf, but the lane's own): g + 8h for
/// scales per block (the scores' and terms' keys) and per channel of K,
/// 2t + 8h for V's per channel (its fragments' keys, 2t + 1 + 8h in the same
/// block: even blocks only).
bool hasLaneScales(LoadKVTileOp op);

/// Fails, with a diagnostic on the op at fault naming what is missing, where
/// the tile program in `grid` has no GPU lowering yet.
LogicalResult checkLowerable(scf::ForallOp grid);
/// The lane channel orders for the formats of `grid` at K and V code widths
/// `keyBits`, `valueBits` (WarpProgram's).
LaneChannels laneChannelsOf(scf::ForallOp grid, int64_t headDim,
                            int64_t keyBits, int64_t valueBits);

/// The key (from the tile's first) of the `i`-th code piece a lane holds
/// of a K (`mma_keys_a`: g, g + 8) or V (2t, 2t + 1, 2t + 8, 2t + 9) tile,
/// key block by key block: the lane's first key (g or 2t) plus a constant,
/// kept apart so that the pieces' addresses differ by constants (which
/// ptxas folds into the copies and loads) rather than by a register each.
struct LaneKey {
  Value first;
  int64_t offset;
};
LaneKey laneKeyOf(WarpProgram &w, FragmentLayout layout, int64_t i);
/// Where a lane's stage-2 codes of a key lie in its head's row: lane l (t of
/// K, g of V) holds `channels` (d/4 or d/8) from channel l * channels on,
/// `bits` wide. It reads `bytes` from byte laneCodeByte, 3-bit codes whole
/// groups of 8 (3 bytes) from the one holding its first; `shifted` where
/// some lane's codes start inside a byte (2 bits: d/8 = 10 at d = 80) or a
/// group (3 bits: 12 at d = 96), which it shifts down after the load (or
/// the widening) by laneCodeShift bits.
struct LaneCodes {
  int64_t channels, bits, bytes;
  bool shifted;
};
LaneCodes laneCodesOf(int64_t headDim, bool keys, int64_t bits);
/// Whether a lane's V codes (`bits` wide, packed in `order`) end inside a
/// byte in msb_first order (2-bit at d = 80: 2.5 bytes), so that the lane
/// turns each byte's codes to lsb_first order as it loads them (a shift
/// within a byte would otherwise bring its low codes first) and reads its
/// channels in that order.
inline bool readsLsbFirst(int64_t headDim, int64_t bits, PackOrder order) {
  return order == PackOrder::msb_first && bits != 3 &&
         headDim / 8 * bits % 8 != 0;
}
/// The first byte lane `lane` (index) reads of its codes, from its head's.
Value laneCodeByte(ImplicitLocOpBuilder &b, const LaneCodes &codes, Value lane);
/// The bits (i32) lane `lane` shifts its loaded (3 bits: widened) codes
/// down by.
Value laneCodeShift(ImplicitLocOpBuilder &b, const LaneCodes &codes,
                    Value lane);

/// The bytes of the pieces a lane loads of each result of `op` (codes,
/// then group scales and zeros for stage 2, then the scale), its stage-2
/// codes `bits` wide.
SmallVector<SmallVector<int64_t>> tilePieceBytes(LoadKVTileOp op,
                                                 int64_t headDim, int64_t bits);
/// Whether `op`'s stage-1 scales are per channel (a row of the warp's per
/// tile, of `channelScaleRowBytes`), not one per tile.
bool hasChannelScales(LoadKVTileOp op);
int64_t channelScaleRowBytes(LoadKVTileOp op, int64_t headDim);
/// 3-bit codes (`bytes` bytes, a multiple of 3, in `words`) in the 4-bit
/// layout of the same bit order: a word per 3 bytes (TileLoads.cpp).
Value widenThreeBitCodes(ImplicitLocOpBuilder &b, Value words, int64_t bytes,
                         PackOrder order);
/// Chooses the loads of `grid` that go through the shared-memory ring and
/// their regions (w.ringLoads, w.ringLoadsPerStep); returns the ring's bytes
/// (0: no ring).
int64_t planRing(WarpProgram &w, scf::ForallOp grid);
/// The byte of `lane`'s part of `piece` in the ring slot at `slot`.
Value ringLaneByte(WarpProgram &w, Value slot, const RingTile::Piece &piece,
                   Value lane);
/// A barrier of the warp's lanes (bar.warp.sync), which also orders their
/// shared-memory accesses.
void warpSync(WarpProgram &w);
/// Copies `pieces` (per result of `op`) into their ring slot.
void copyToRing(WarpProgram &w, LoadKVTileOp op,
                ArrayRef<SmallVector<TilePiece>> pieces);
/// Waits for the ring copies of `op`'s tiles and reads them into registers.
void lowerWaitTiles(WarpProgram &w, WaitTilesOp op);
/// After key loop `loop`: waits for its copies still in flight (look-ahead
/// tiles past the end), so that the next loop may reuse the ring.
void drainRing(WarpProgram &w, scf::ForOp loop);

/// Where the group constants of `op` (a stage-2 K tile if `keys`, else V)
/// were read from the ring and the ring has their staging area: converts
/// them (each group of the tile) once per warp into it and returns true
/// (StagedConstants reads them); else emits nothing and returns false.
bool stageGroupConstants(WarpProgram &w, DequantizeTileOp op, bool keys);
/// The staged (s2, z2 as dequantPair takes it) f16x2 pairs of K pair unit or
/// V channel u (in LaneChannels order) of this lane, of the tile's stage-2
/// group `group`.
class StagedConstants {
public:
  StagedConstants(WarpProgram &w, bool keys, int64_t group)
      : w(w), keys(keys), group(group), chunks(2, Regs(w.headDim / 32)) {}
  std::pair<Value, Value> operator[](int64_t u);

private:
  WarpProgram &w;
  bool keys;
  int64_t group;
  SmallVector<Regs> chunks;
};

void lowerLoadQueryTile(WarpProgram &w, LoadQueryTileOp op);
void lowerLoadKVTile(WarpProgram &w, LoadKVTileOp op);
void lowerDequantizeTile(WarpProgram &w, DequantizeTileOp op);
/// The stage-1 scale of half `h` of key block `kb` of a dequantized K/V
/// tile of `blocks` key blocks (its registers after the fragments: one, or
/// one per block of 8 keys).
Value tileScale(WarpProgram &w, Value tile, int64_t blocks, int64_t kb,
                int64_t h);
void lowerTileScores(WarpProgram &w, TileScoresOp op);
void lowerSoftmaxUpdate(WarpProgram &w, SoftmaxUpdateOp op);
void lowerTileRowMax(WarpProgram &w, TileRowMaxOp op);
/// qattn.key_chunk, by the warp's lanes together (TileChunks.cpp).
void lowerKeyChunk(WarpProgram &w, KeyChunkOp op);
/// The first slot and the count of sequence `seq`'s chunks among `chunks`
/// balanced chunks of `tileKeys`-key tiles of the lengths `kvLens` (as
/// qattn.key_chunk cuts them), by the warp's lanes together (`lane`: this
/// thread's).
std::pair<Value, Value> sequenceChunks(ImplicitLocOpBuilder &b, Value lane,
                                       const FlatTensor &kvLens, Value chunks,
                                       int64_t tileKeys, Value seq);
/// The registers of a splat constant of the row state ([16]) or the
/// accumulators ([16, d]).
Regs splatState(WarpProgram &w, RankedTensorType type, double value);
/// Stores the warp's row state or accumulators, the source of `insert` (a
/// tensor.parallel_insert_slice of the grid's terminator), into its slice.
void storeRows(WarpProgram &w, tensor::ParallelInsertSliceOp insert);

/// Lowers the ops of `block` (a grid body or a key loop's) into the warp's
/// code at w.b (TileBody.cpp).
LogicalResult lowerGridBody(WarpProgram &w, Block &block);
/// A constant of a grid body: a scalar cloned, or a splat of the row state or
/// accumulators.
LogicalResult lowerGridConstant(WarpProgram &w, arith::ConstantOp op);

/// The combine kernel's tasks per output row (32 channels each), its CTAs'
/// warps, and the f32s of shared memory a CTA takes (32 channels, a maximum
/// and a sum a warp).
int64_t combineChunksPerRow(int64_t headDim);
constexpr int64_t kCombineWarps = 4;
constexpr int64_t kCombineSharedFloats =
    kCombineWarps * (kernels::kThreadsPerWarp + 2);
/// The warps of the combine kernel that share an output row's 32 channels,
/// 1, 2 or 4, from the split count `splits` (index): on the host, for the
/// launch's CTA count, and in the kernel alike.
Value combineWarpsPerTask(ImplicitLocOpBuilder &b, Value splits);
/// Emits the body of the combine kernel of `op` over its flat arguments
/// (acc, max, sum, out, and kv_lens where its splits are balanced chunks)
/// and its workgroup memory `shared`
/// (memref<kCombineSharedFloats x f32>).
void emitCombineKernel(ImplicitLocOpBuilder &b, CombineSplitsOp op,
                       ArrayRef<FlatTensor> args, Value shared);

/// Lowers every decode grid of the tile layer in `module` (and the
/// combine_splits after it) to kernels in `kernels` and their launches,
/// with limits from `chip`.
LogicalResult lowerTileGrids(ModuleOp module, gpu::GPUModuleOp kernels,
                             const ChipInfo &chip);
/// Whether `module` holds a decode grid of the tile layer.
bool hasTileGrids(ModuleOp module);

} // namespace mlir::qattn::tiles

#endif // QATTN_LIB_CONVERSION_QATTNTOGPU_TILELOWERING_H
