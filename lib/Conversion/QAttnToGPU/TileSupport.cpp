//===- TileSupport.cpp - which tile programs the GPU lowering takes -------===//
//
// Part of the qattn project.
//
// The register lowering of the tile layer covers decode over 2-, 3- and 4-bit
// stage-2 caches (per-head widths too; groups of 2, 4, 8 keys or multiples of
// 16, the shorter ones by the constants of each lane's keys' groups) or int8
// stage-1 caches, with stage-1 scales per block or per channel (blocks of any
// size: those that neither cover a tile nor split it into halves of key
// blocks by the scale, or the channels' scales, of each of a lane's keys;
// per channel even sizes for V), the int8 tail, float queries (rounded to
// f16) or int8 ones (scales per block, or per channel applied before the
// rounding), exact and SAS softmax, head dims 80 and the multiples of 32 to
// 256. Everything else is a diagnostic on the op, naming what is missing.
// The head dims, code widths, blocks and groups are
// qattn/Target/TileCoverage.h's, by which qattn-tile also keeps static decode
// that this would refuse off the tile layer (whyNotGpuDecodeTiles); the
// tile-relative limits (a tile holds whole blocks and groups, or halves of
// its key blocks) are this file's. Also the lane channel orders, which the
// cache's packing fixes (TileLowering.h).
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Target/TileCoverage.h"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

static LogicalResult checkLoad(LoadKVTileOp op, int64_t headDim) {
  auto fail = [&](const Twine &what) {
    return op.emitOpError("has no GPU lowering yet for ") << what;
  };
  int64_t keys = op.getKeys();
  if (keys != kKeyBlock && keys != 2 * kKeyBlock)
    return fail("tiles of " + Twine(keys) + " keys (16 and 32 only)");
  std::optional<FragmentLayout> layout = op.getLayout();
  if (layout != FragmentLayout::mma_keys_a &&
      layout != FragmentLayout::mma_values_a)
    return fail("a tile without a key or value fragment layout");
  // Blocks and groups that do not fit the tile (unitFitsTile) are read per
  // lane key: scales (hasLaneScales) but V's per channel of odd blocks, and
  // groups of 2 and 4 (hasLaneGroups).
  if (Stage1Attr s1 = op.getStage1Attr();
      s1 && !unitFitsTile(s1.getBlock(), keys) && !hasLaneScales(op))
    return fail("stage-1 blocks of " + Twine(s1.getBlock()) +
                (s1.getBlock() == 1 ? " key" : " keys") + " in tiles of " +
                Twine(keys));
  if (Stage2Attr s2 = op.getStage2Attr()) {
    if (std::string why = whyNoTileGpuCodes(headDim, s2.getBits());
        !why.empty())
      return fail(why);
    int64_t group = s2.getGroup();
    if (!unitFitsTile(group, keys) && !hasLaneGroups(s2))
      return fail("stage-2 groups of " + Twine(group) +
                  (group == 1 ? " key" : " keys") + " in tiles of " +
                  Twine(keys));
  }
  return success();
}

LogicalResult mlir::qattn::tiles::checkLowerable(scf::ForallOp grid) {
  int64_t headDim = 0;
  WalkResult result = grid.getBody()->walk([&](Operation *op) {
    LogicalResult ok = success();
    if (auto load = dyn_cast<LoadQueryTileOp>(op)) {
      auto type = cast<RankedTensorType>(load.getQ().getType());
      headDim = type.getDimSize(3);
      if (std::string why = whyNoTileGpuHeadDim(headDim); !why.empty())
        ok = load.emitOpError("has no GPU lowering yet for ") << why;
    } else if (auto load = dyn_cast<LoadKVTileOp>(op)) {
      ok = checkLoad(load, headDim);
    }
    return failed(ok) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LaneChannels mlir::qattn::tiles::laneChannelsOf(scf::ForallOp grid,
                                                int64_t headDim,
                                                int64_t keyBits,
                                                int64_t valueBits) {
  LaneChannels c;
  c.keyPairs = keyPairs(headDim, 8, PackOrder::lsb_first);
  c.valueChannels = valueChannels(headDim, 8, PackOrder::lsb_first);
  grid.getBody()->walk([&](LoadKVTileOp load) {
    Stage2Attr s2 = load.getStage2Attr();
    if (!s2)
      return;
    if (load.getLayout() == FragmentLayout::mma_keys_a)
      c.keyPairs = keyPairs(headDim, keyBits, s2.getOrder());
    else
      c.valueChannels =
          valueChannels(headDim, valueBits,
                        readsLsbFirst(headDim, valueBits, s2.getOrder())
                            ? PackOrder::lsb_first
                            : s2.getOrder());
  });
  return c;
}
