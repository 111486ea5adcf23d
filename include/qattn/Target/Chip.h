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

//===----------------------------------------------------------------------===//
// The tile layer's decode grid kernel
//===----------------------------------------------------------------------===//
//
// One warp per grid point (a CTA of 32 threads). qattn-tile sizes the
// shape-generic grid's key splits by how many of those warps an SM keeps
// resident, and the GPU lowering asks ptxas for that occupancy
// (nvvm.minctasm): both read it here, so that they agree.

/// Registers a lane of the grid kernel may take: latency is hidden by warps
/// (16 per SM at 128), but two row blocks' accumulators (more than 8
/// (query, head) rows per KV head) or two key blocks' fragments (32-key
/// tiles) need more. H200, B8 Hq32 Hkv8 d128 L32K 4-bit, same call: 16-key
/// tiles at 128 (24 bytes spilled) 177.1 us, at 168 (none) 192.8; 32-key
/// tiles at 128 (200 bytes spilled) 164.8, at 168 (none) 159.1. With the
/// group constants staged per warp (g32: 8 bytes spilled at 168): 32-key
/// tiles at 144 (64 spilled, asked as nvvm.maxnreg) 158.3, at 152 (16)
/// 149.5, at 168 120.6.
inline constexpr int64_t kTileGridRegistersNarrow = 128,
                         kTileGridRegistersWide = 168;
/// Past head dim 128 a row block's accumulators and query fragments alone
/// take 96 registers a lane (d = 256: 64 and 32): the grid kernel takes the
/// most a lane may have (8 warps an SM). ptxas, 4-bit d256 paged: 238
/// registers, no spills; at 168, 144 bytes spilled. Not yet timed.
inline constexpr int64_t kTileGridRegistersLargeHead = 256;
/// The lanes of a warp, as the grid kernel's CTA.
inline constexpr int64_t kTileGridWarpThreads = 32;

/// The register budget of the grid kernel whose tiles hold `tileKeys` keys
/// of head dim `headDim` and whose rows take `rowBlocks` blocks of 8
/// (query, head) pairs. Stage-2 groups of 2 or 4 keys (`laneGroups`: a lane
/// holds the constants of two groups a key block) take the wide budget
/// (ptxas, 4-bit d128 groups of 4: 236 bytes spilled at 128 registers, 12 at
/// 168).
inline constexpr int64_t tileGridRegisters(int64_t tileKeys, int64_t rowBlocks,
                                           int64_t headDim,
                                           bool laneGroups = false) {
  if (headDim > 128)
    return kTileGridRegistersLargeHead;
  return rowBlocks == 1 && tileKeys == 16 && !laneGroups
             ? kTileGridRegistersNarrow
             : kTileGridRegistersWide;
}

/// The grid kernel's warps (CTAs) resident on one SM of `chip` at that
/// budget: 16 at 128 registers, 12 at 168, 8 at 256 on sm_90a.
inline constexpr int64_t tileGridWarpsPerSM(const ChipInfo &chip,
                                            int64_t tileKeys, int64_t rowBlocks,
                                            int64_t headDim,
                                            bool laneGroups = false) {
  return chip.registersPerSM /
         (kTileGridWarpThreads *
          tileGridRegisters(tileKeys, rowBlocks, headDim, laneGroups));
}

/// The attribute on a decode grid of the tile layer (i64) naming the warps
/// per SM its kernel is built for (qattn-tile's split count fills them; the
/// GPU lowering's register budget keeps them resident).
inline constexpr const char kGridWarpsPerSMAttr[] = "qattn.grid_warps_per_sm";

/// The row blocks of 8 (query, head) pairs the grid kernel's warp covers
/// for `pairs` pairs of a KV head (at most 16 per row tile).
inline constexpr int64_t tileGridRowBlocks(int64_t pairs) {
  return pairs <= 8 ? 1 : 2;
}

} // namespace mlir::qattn

#endif // QATTN_TARGET_CHIP_H
