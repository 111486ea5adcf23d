//===- TileSupport.cpp - which tile programs the GPU lowering takes -------===//
//
// Part of the qattn project.
//
// The register lowering of the tile layer covers decode over 2-, 3- and 4-bit
// stage-2 caches (per-head widths too, groups of 8 keys or more) or int8
// stage-1 caches, with stage-1 scales per block or per channel (blocks of 8
// keys or more that cover a tile or split it into halves of key blocks), the
// int8 tail, float queries (rounded to f16) or int8 ones (scales per block,
// or per channel applied before the rounding), exact and SAS softmax, head
// dims 64 and 128; and, where qattn-tile marked the grid
// kUnverifiedGpuLoweringsAttr (not yet run on the H200), head dims 80 and the
// other multiples of 32 to 256, stage-1 blocks of any other size (each lane
// reads the scale, or its channels' scales, of each of its keys; per
// channel even sizes for V) and stage-2 groups of 2 and 4 keys (the
// constants of each lane's keys' groups). Everything else is a diagnostic on
// the op, naming what is missing. The head dims, code widths, blocks and groups
// are qattn/Target/TileCoverage.h's, by which qattn-tile also keeps static
// decode that this would refuse off the tile layer (whyNotGpuDecodeTiles); the
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

static LogicalResult checkLoad(LoadKVTileOp op, int64_t headDim,
                               bool unverified) {
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
  // A block or group covers the tile, or the tile holds whole ones of 8
  // keys or more (a lane's keys in a key block are two halves of 8:
  // constantOfHalf). Of 4 keys, a lane's group would depend on its lane.
  auto fits = [&](int64_t unit) {
    return unit % keys == 0 || (keys % unit == 0 && unit % 8 == 0);
  };
  if (Stage1Attr s1 = op.getStage1Attr()) {
    // Scales per block that do not fit: a scale per lane key
    // (hasLaneScales), not yet run on the H200.
    int64_t block = s1.getBlock();
    std::string sizes = "stage-1 blocks of " + std::to_string(block) +
                        (block == 1 ? " key" : " keys") + " in tiles of " +
                        std::to_string(keys);
    if (hasChannelScales(op) && !fits(s1.getBlock()) && !hasLaneScales(op))
      return fail(sizes);
    if (hasLaneScales(op) && !unverified)
      return fail(sizes + " (lowered with a scale per lane key, but not yet "
                          "run on the H200 matrix: qattn-tile "
                          "unverified-gpu-lowerings=true takes them)");
  }
  if (Stage2Attr s2 = op.getStage2Attr()) {
    if (std::string why = whyNoTileGpuCodes(headDim, s2.getBits());
        !why.empty())
      return fail(why);
    int64_t group = s2.getGroup();
    std::string sizes = "stage-2 groups of " + std::to_string(group) +
                        (group == 1 ? " key" : " keys") + " in tiles of " +
                        std::to_string(keys);
    // Groups of 2 and 4: the constants of the lane's keys' groups.
    if (hasLaneGroups(s2) && !unverified)
      return fail(sizes + " (lowered with the constants of the lane's keys' "
                          "groups, but not yet run on the H200 matrix: "
                          "qattn-tile unverified-gpu-lowerings=true takes "
                          "them)");
    if (!fits(group) && !hasLaneGroups(s2))
      return fail(sizes);
  }
  return success();
}

LogicalResult mlir::qattn::tiles::checkLowerable(scf::ForallOp grid) {
  int64_t headDim = 0;
  bool unverified = grid->hasAttr(kUnverifiedGpuLoweringsAttr);
  WalkResult result = grid.getBody()->walk([&](Operation *op) {
    LogicalResult ok = success();
    if (auto load = dyn_cast<LoadQueryTileOp>(op)) {
      auto type = cast<RankedTensorType>(load.getQ().getType());
      headDim = type.getDimSize(3);
      if (std::string why = whyNoTileGpuHeadDim(headDim, unverified);
          !why.empty())
        ok = load.emitOpError("has no GPU lowering yet for ") << why;
    } else if (auto load = dyn_cast<LoadKVTileOp>(op)) {
      ok = checkLoad(load, headDim, unverified);
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
