//===- TileDecode.h - decode attention as tile programs ---------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_DIALECT_QATTN_TRANSFORMS_TILEDECODE_H
#define QATTN_LIB_DIALECT_QATTN_TRANSFORMS_TILEDECODE_H

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"

#include <string>

namespace mlir::qattn {
/// Why the tile layer cannot express `op` yet, or an empty string.
std::string whyNotDecodeTiles(AttentionOp op);
/// Replaces `op` by its decode grid over the tile layer (see TileDecode.cpp)
/// with `splits` key splits per sequence.
/// `tileKeys` 16 or 32; 0 picks (32 where the formats allow it).
void tileDecodeAttention(AttentionOp op, int64_t splits, int64_t tileKeys);
} // namespace mlir::qattn

#endif // QATTN_LIB_DIALECT_QATTN_TRANSFORMS_TILEDECODE_H
