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

/// Head dims 64 and 128; 80, 96 and 256 only where `unverified` asks for the
/// lowerings that have not run on the H200 matrix yet (qattn-tile's
/// unverified-gpu-lowerings).
inline std::string whyNoTileGpuHeadDim(int64_t headDim, bool unverified) {
  bool lowered = headDim == 64 || headDim == 80 || headDim == 96 ||
                 headDim == 128 || headDim == 256;
  if (!lowered)
    return "head dim " + std::to_string(headDim) +
           " (64, 80, 96, 128 and 256 only)";
  if (headDim != 64 && headDim != 128 && !unverified)
    return "head dim " + std::to_string(headDim) +
           " (lowered, but not yet run on the H200 matrix: qattn-tile "
           "unverified-gpu-lowerings=true takes it)";
  return "";
}

/// Stage-2 code widths 2 to 4 bits, where a lane's codes of a key fit the
/// fragments' loads: its d/4 K channels whole or half words (a half word is
/// read spread: keyPairs), its d/8 V channels whole bytes, and 3-bit codes
/// (widened to 4 bits as they are read) whole groups of 3 bytes. So 2 bits
/// at d = 96 but not 80, 3 bits at 64 and 128 only.
inline std::string whyNoTileGpuCodes(int64_t headDim,
                                     llvm::ArrayRef<int64_t> widths) {
  for (int64_t bits : widths) {
    if (bits < 2 || bits > 4)
      return std::to_string(bits) + "-bit codes (2, 3 and 4 only)";
    int64_t keyBits = headDim / 4 * bits, valueBits = headDim / 8 * bits;
    bool fits = bits == 3 ? keyBits % 24 == 0 && valueBits % 24 == 0
                          : keyBits % 16 == 0 && valueBits % 8 == 0;
    if (!fits)
      return std::to_string(bits) + "-bit codes at head dim " +
             std::to_string(headDim);
  }
  return "";
}

/// Stage-1 blocks and stage-2 groups (`what`) of `keys` keys: 8 (half of an
/// mma key block, in which a lane's keys g and g + 8 lie apart) or multiples
/// of 16. Of fewer keys a lane's group would depend on its lane.
inline std::string whyNoTileGpuKeys(llvm::StringRef what, int64_t keys) {
  if (keys == 8 || keys % 16 == 0)
    return "";
  return what.str() + " of " + std::to_string(keys) +
         " keys (8 and multiples of 16 only)";
}

} // namespace mlir::qattn

#endif // QATTN_TARGET_TILECOVERAGE_H
