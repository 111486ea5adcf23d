//===- TileDecode.h - decode attention as tile programs ---------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_DIALECT_QATTN_TRANSFORMS_TILEDECODE_H
#define QATTN_LIB_DIALECT_QATTN_TRANSFORMS_TILEDECODE_H

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Target/Chip.h"

#include <string>

namespace mlir::qattn {
/// How many key splits a decode grid takes.
struct DecodeSplits {
  /// Nonzero: this many, a constant. 0: computed from the batch and the
  /// cache's capacity where they are known (at run time when dynamic; see
  /// shapeGenericSplits in TileDecode.cpp), to fill one wave of `sms` SMs of
  /// `chip` with the grid kernel's resident warps, none shorter than
  /// `minKeysPerSplit` keys of the capacity.
  int64_t fixed = 0;
  ChipInfo chip = kSm90a;
  int64_t sms = kSm90a.numSMs;
  int64_t minKeysPerSplit = 128;
};

/// The shape of a decode grid's tile programs.
struct TileProgramShape {
  /// Keys per tile, 16 or 32; 0 picks (32 where the formats allow it).
  int64_t tileKeys = 0;
  /// The online softmax's lazy_max (natural-log units; 0: the exact running
  /// max at every tile); negative picks (see chooseLazyMax in TileDecode.cpp).
  double lazyMax = -1.0;
  /// The grid's fastest-varying CTA index walks the KV heads of a key split
  /// (which read the same code rows) instead of a head's splits.
  bool headsFastest = true;
  /// Warps per SM of the grid kernel (its register budget); 0 takes
  /// tileGridWarpsPerSM's.
  int64_t warpsPerSM = 0;
  /// With kv_lens, cut the batch's keys into chunks of one size
  /// (qattn.key_chunk) instead of each sequence's into the same number of
  /// splits: varlen batches are bound by their longest sequence otherwise.
  bool balanceSplits = false;
};

/// The most queries a sequence decode has (1 to 16: decode and speculative
/// decode); more are prefill.
inline constexpr int64_t kMaxDecodeQueries = 16;

/// Why the tile layer cannot express `op` yet, or an empty string.
std::string whyNotDecodeTiles(AttentionOp op);
/// Why a static `op` does not go through the tile layer to the GPU, as a
/// phrase with the tile layer its subject, or an empty string: it "cannot
/// express it yet: " (whyNotDecodeTiles), "takes at most 16 queries a
/// sequence" (more are prefill), or "has no GPU lowering yet for " what the
/// GPU lowering of the tile ops does not cover (qattn/Target/TileCoverage.h,
/// which checkLowerable also applies).
std::string whyNotGpuDecodeTiles(AttentionOp op);
/// Replaces `op` by its decode grid over the tile layer (see TileDecode.cpp)
/// with `splits` key splits per sequence.
void tileDecodeAttention(AttentionOp op, const DecodeSplits &splits,
                         const TileProgramShape &shape);
} // namespace mlir::qattn

#endif // QATTN_LIB_DIALECT_QATTN_TRANSFORMS_TILEDECODE_H
