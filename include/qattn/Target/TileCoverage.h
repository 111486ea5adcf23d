//===- TileCoverage.h - the decode formats the tile GPU lowering takes ----===//
//
// Part of the qattn project.
//
// What the tile layer's GPU lowering covers, in one place: qattn-tile routes
// static decode by it (whyNotGpuDecodeTiles, on the attention's formats) and
// the lowering checks each tile program against it (checkLowerable, on the
// tile ops), so that the two cannot drift apart. Each function returns why a
// format is not covered, as the phrase after "no GPU lowering yet for ", or
// an empty string.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_TARGET_TILECOVERAGE_H
#define QATTN_TARGET_TILECOVERAGE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::qattn {

/// Head dims that are multiples of 32 from 32 to 256, and 80. Other
/// multiples of 16 lower too, but ptxas spills hundreds of bytes a lane
/// (4-bit, 16 heads over 8: d = 112 508 bytes at 168 registers, d = 208 424
/// at 255); they stay refused until that is worked on. Past 256 a row
/// block's accumulators alone would take 144 registers a lane (d = 288).
inline std::string whyNoTileGpuHeadDim(int64_t headDim) {
  if (headDim == 80 || (headDim % 32 == 0 && headDim >= 32 && headDim <= 256))
    return "";
  return "head dim " + std::to_string(headDim) +
         " (multiples of 32 from 32 to 256, and 80, only)";
}

/// Stage-2 code widths 2 to 4 bits, where a lane's K codes of a key (its
/// d/4 channels; 3-bit codes widened to 4 bits as they are read) are whole
/// words, or end in a half word or a byte (read spread: keyPairs). A lane's
/// d/8 V channels may start inside a byte or a group of 8 3-bit codes (it
/// reads from there and shifts). So all three widths at d = 80 and the
/// multiples of 32.
inline std::string whyNoTileGpuCodes(int64_t headDim,
                                     llvm::ArrayRef<int64_t> widths) {
  for (int64_t bits : widths) {
    if (bits < 2 || bits > 4)
      return std::to_string(bits) + "-bit codes (2, 3 and 4 only)";
    int64_t tail = headDim / 4 * (bits == 3 ? 4 : bits) % 32;
    if (tail != 0 && tail != 8 && tail != 16)
      return std::to_string(bits) + "-bit codes at head dim " +
             std::to_string(headDim);
  }
  return "";
}

/// Whether stage-1 blocks or stage-2 groups of `keys` keys are 8 (half of an
/// mma key block, in which a lane's keys g and g + 8 lie apart) or multiples
/// of 16, which a tile's constants follow. Of fewer keys a lane's group would
/// depend on its lane.
inline bool tileGpuWholeKeys(int64_t keys) {
  return keys == 8 || keys % 16 == 0;
}
/// Why stage-1 blocks or stage-2 groups (`what`) of `keys` keys are not
/// tileGpuWholeKeys.
inline std::string whyNoTileGpuKeys(llvm::StringRef what, int64_t keys) {
  if (tileGpuWholeKeys(keys))
    return "";
  return what.str() + " of " + std::to_string(keys) +
         (keys == 1 ? " key" : " keys") + " (8 and multiples of 16 only)";
}

/// Stage-1 blocks of `keys` keys: any size (8 and multiples of 16 by the
/// tile's scales, whyNoTileGpuKeys; others, 1, 2, 4: an int8 cache's scale
/// per token, 12, 24, ..., by the scale a lane reads for each of its keys of
/// a key block); with scales per channel (`perChannel`) even sizes only for
/// those others (V's fragments pair keys 2t and 2t + 1 under one block's
/// scales).
inline std::string whyNoTileGpuBlocks(int64_t keys, bool perChannel) {
  if (perChannel && keys % 2 != 0)
    return whyNoTileGpuKeys("stage-1 blocks", keys);
  return "";
}

/// Whether stage-2 groups of `keys` keys are shorter than half a key block
/// but pair V's keys 2t, 2t + 1 (2 or 4), so that a lane loads the constants
/// of its own keys' groups (a register budget of their own, Chip.h).
inline bool tileGpuGroupsPerLane(int64_t keys) {
  return keys == 2 || keys == 4;
}

/// Stage-2 groups of `keys` keys: as whyNoTileGpuKeys, and those of
/// tileGpuGroupsPerLane. Not 1: V's fragment pairs two keys under one
/// group's constants.
inline std::string whyNoTileGpuGroups(int64_t keys) {
  if (tileGpuGroupsPerLane(keys) || tileGpuWholeKeys(keys))
    return "";
  return "stage-2 groups of " + std::to_string(keys) +
         (keys == 1 ? " key" : " keys") + " (2, 4, 8 and multiples of 16 only)";
}

} // namespace mlir::qattn

#endif // QATTN_TARGET_TILECOVERAGE_H
