//===- Chip.h - what the GPU passes know of a chip --------------*- C++ -*-===//
//
// Part of the qattn project.
//
// One description per supported `chip` (the NVVM target's name): the limits
// the tiling heuristics and the kernel emitters size themselves by, in one
// place instead of constants scattered through the emitters.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_TARGET_CHIP_H
#define QATTN_TARGET_CHIP_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::qattn {

struct ChipInfo {
  llvm::StringLiteral chip;
  /// Streaming multiprocessors (the decode split heuristics fill them).
  int64_t numSMs;
  /// 32-bit registers per SM (occupancy of the decode kernel).
  int64_t registersPerSM;
  /// Shared memory of an SM, and what each resident CTA holds back of it.
  int64_t sharedBytesPerSM, sharedBytesReservedPerCta;
  /// Shared memory a CTA may opt in to, and what it may declare statically.
  int64_t maxSharedBytesPerCta, staticSharedBytes;
};

/// Hopper with its architecture-specific features (wgmma, setmaxnreg):
/// H100 and H200 SXM, 132 SMs. (H100 PCIe has 114: pass qattn-tile's
/// num-sms.)
inline constexpr ChipInfo kSm90a = {"sm_90a", 132,       65536,
                                    228 * 1024, 1024, 227 * 1024,
                                    48 * 1024};

/// The description of `chip`, or nothing for a chip qattn has no kernels
/// for.
inline std::optional<ChipInfo> lookupChip(llvm::StringRef chip) {
  if (chip == kSm90a.chip)
    return kSm90a;
  return std::nullopt;
}

/// The chips lookupChip knows, for diagnostics.
inline std::string knownChips() { return kSm90a.chip.str(); }

} // namespace mlir::qattn

#endif // QATTN_TARGET_CHIP_H
