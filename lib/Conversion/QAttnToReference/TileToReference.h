//===- TileToReference.h - the tile layer's reference patterns -*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_CONVERSION_QATTNTOREFERENCE_TILETOREFERENCE_H
#define QATTN_LIB_CONVERSION_QATTNTOREFERENCE_TILETOREFERENCE_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::qattn {
/// Patterns that lower the tile-layer ops to loops over buffers.
void populateTileToReferencePatterns(RewritePatternSet &patterns);
} // namespace mlir::qattn

#endif // QATTN_LIB_CONVERSION_QATTNTOREFERENCE_TILETOREFERENCE_H
