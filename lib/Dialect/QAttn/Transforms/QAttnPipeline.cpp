//===- QAttnPipeline.cpp - pipeline depth of the attention key stream -----===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Dialect/QAttn/Transforms/Passes.h"

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNPIPELINE
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"
} // namespace mlir::qattn

using namespace mlir;
using namespace mlir::qattn;

namespace {
struct QAttnPipelinePass : qattn::impl::QAttnPipelineBase<QAttnPipelinePass> {
  using QAttnPipelineBase::QAttnPipelineBase;

  void runOnOperation() override {
    WalkResult result = getOperation()->walk([&](AttentionOp op) {
      GpuTilingAttr t = op.getGpuTilingAttr();
      if (!t) {
        op.emitOpError("has no #qattn.gpu_tiling: run qattn-tile first");
        return WalkResult::interrupt();
      }
      int64_t stages = t.getStages();
      if (numStages > 0)
        stages = numStages;
      auto diag = [&] { return op.emitOpError("qattn-pipeline: "); };
      if (failed(GpuTilingAttr::verifyInvariants(
              diag, t.getWarps(), t.getSplits(), t.getKeysPerStep(),
              t.getKernel(), stages, t.getPv(), t.getProducer())))
        return WalkResult::interrupt();
      op.setGpuTilingAttr(GpuTilingAttr::get(
          &getContext(), t.getWarps(), t.getSplits(), t.getKeysPerStep(),
          t.getKernel(), stages, t.getPv(), t.getProducer()));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
