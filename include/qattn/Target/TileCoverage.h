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

/// Head dims 64 and 128; 96 (2-, 4-bit and int8 codes) only where `unverified`
/// asks for the lowerings that have not run on the H200 matrix yet
/// (qattn-tile's unverified-gpu-lowerings).
inline std::string whyNoTileGpuHeadDim(int64_t headDim, bool unverified) {
  if (headDim != 64 && headDim != 96 && headDim != 128)
    return "head dim " + std::to_string(headDim) + " (64, 96 and 128 only)";
  if (headDim == 96 && !unverified)
    return "head dim 96 (lowered, but not yet run on the H200 matrix: "
           "qattn-tile unverified-gpu-lowerings=true takes it)";
  return "";
}

/// Stage-2 code widths 2 to 4 bits; at d = 96 not 3 (a lane's 12 V
/// channels of 3-bit codes are 4.5 bytes; its 24 K channels of 2-bit codes
/// end in a half word, which keyPairs reads spread).
inline std::string whyNoTileGpuCodes(int64_t headDim,
                                     llvm::ArrayRef<int64_t> widths) {
  for (int64_t bits : widths) {
    if (bits < 2 || bits > 4)
      return std::to_string(bits) + "-bit codes (2, 3 and 4 only)";
    if (headDim == 96 && bits == 3)
      return "3-bit codes at head dim 96 (2-, 4-bit and int8 only)";
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
