//===- QAttnTile.cpp - choose the GPU tiling of attention ops -------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Dialect/QAttn/Transforms/Passes.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "qattn-tile"

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNTILE
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"
} // namespace mlir::qattn

using namespace mlir;
using namespace mlir::qattn;

namespace {
struct QAttnTilePass : qattn::impl::QAttnTileBase<QAttnTilePass> {
  using QAttnTileBase::QAttnTileBase;

  /// Enough CTAs to fill the machine, but no slice shorter than the minimum:
  /// a decode row alone would otherwise stream its whole cache through 1 SM.
  int64_t chooseSplits(AttentionOp op) const {
    // One warp per (batch, KV head, query): it serves the whole GQA group.
    int64_t tasks = op.getBatch() * op.getNumKVHeads() * op.getNumQueries();
    int64_t ctas = llvm::divideCeilSigned(tasks, int64_t(warps));
    int64_t keys = op.getNumCacheKeys() + op.getNumBufferKeys();
    int64_t wanted =
        llvm::divideCeilSigned(int64_t(numSMs * ctasPerSM), ctas);
    int64_t affordable = std::max<int64_t>(1, keys / minKeysPerSplit);
    return std::max<int64_t>(1, std::min(wanted, affordable));
  }

  void runOnOperation() override {
    if (failed(GpuTilingAttr::verifyInvariants(
            [&] { return getOperation().emitError("qattn-tile: "); }, warps,
            splits > 0 ? int64_t(splits) : 1, keysPerStep)) ||
        numSMs < 1 || ctasPerSM < 1 || minKeysPerSplit < 1) {
      getOperation().emitError("qattn-tile: invalid options");
      return signalPassFailure();
    }
    getOperation()->walk([&](AttentionOp op) {
      if (op.getGpuTilingAttr())
        return;
      int64_t s = splits > 0 ? static_cast<int64_t>(splits) : chooseSplits(op);
      LLVM_DEBUG(llvm::dbgs() << "qattn-tile: " << op.getLoc() << " warps="
                              << warps << " splits=" << s << "\n");
      op.setGpuTilingAttr(
          GpuTilingAttr::get(&getContext(), warps, s, keysPerStep));
    });
  }
};
} // namespace
