//===- QAttnTile.cpp - choose the GPU tiling of attention ops -------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "TileDecode.h"

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Dialect/QAttn/Transforms/Passes.h"
#include "qattn/Target/Chip.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "qattn-tile"

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNTILE
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"
} // namespace mlir::qattn

using namespace mlir;
using namespace mlir::qattn;

namespace {
constexpr int64_t kMmaWarps = 4; // see runOnOperation
// Causal rows from which the f16 wgmma kernel takes two warpgroups per CTA
// (see twoWarpgroups).
constexpr int64_t kTwoWarpgroupCausalRows = 8192;
constexpr int64_t kWgmmaStagesBelow128 = 4; // see runOnOperation
// Causal prefill with this many queries or more takes a producer warpgroup
// (see producerWarpgroup), with a ring of 4 stages.
constexpr int64_t kProducerCausalRows = 4096, kProducerStages = 4;

struct QAttnTilePass : qattn::impl::QAttnTileBase<QAttnTilePass> {
  using QAttnTileBase::QAttnTileBase;

  /// Prefill the tensor-core kernel can run, with enough query rows for an
  /// m16 tile.
  static bool fitsMmaKernel(AttentionOp op) {
    return op.whyNotMmaKernel().empty() && op.getNumQueries() >= 16;
  }

  /// Whether the wgmma kernel with f16 P.V at d = 128 takes 8 warps: two
  /// warpgroups, 128 query rows, sharing one ring. On the H200 (f16 P.V,
  /// same inputs, one call): B4 H32 N4K 1723 -> 1615 us, B1 N4K 472 -> 425,
  /// causal B1 N16K 3435 -> 3335 and B4 N8K 3687 -> 3539, B4 N4K 985 ->
  /// 983; but B4 N2K causal 305 -> 312 and N1K 112 -> 119, where the
  /// diagonal's extra fully masked tile (the first warpgroup walks the
  /// second's keys) weighs on short rows. fp8 P.V lost 5-8% (it fits 4
  /// one-warpgroup CTAs per SM). Only where the grid still gives every SM
  /// two such CTAs.
  bool twoWarpgroups(AttentionOp op, GpuKernel kernel, PvOperands pv) const {
    if (kernel != GpuKernel::wgmma || op.getHeadDim() != 128 ||
        pv != PvOperands::f16)
      return false;
    if (op.getCausal() && op.getNumQueries() < kTwoWarpgroupCausalRows)
      return false;
    int64_t ctas = op.getBatch() * op.getNumQueryHeads() *
                   llvm::divideCeilSigned(op.getNumQueries(), int64_t(128));
    return ctas >= 2 * sms;
  }

  /// Whether the wgmma kernel with f16 P.V at d = 128 takes a producer
  /// warpgroup beside two that compute (producer = warpgroup). On the H200
  /// (same inputs, one call, against this pass's other choices): causal B1
  /// H32 N16K 3489 -> 3144 us, B4 N4K 982 -> 966; but B4 N1K causal 109 ->
  /// 118, B4 N4K non-causal 1620 -> 1753, and with fp8 P.V 8-17% slower
  /// everywhere (docs/PERF.md).
  bool producerWarpgroup(AttentionOp op, GpuKernel kernel,
                         PvOperands pv) const {
    return kernel == GpuKernel::wgmma && op.getHeadDim() == 128 &&
           pv == PvOperands::f16 && op.getCausal() &&
           op.getNumQueries() >= kProducerCausalRows;
  }

  /// Enough CTAs to fill the machine, but no slice shorter than the minimum:
  /// a decode row alone would otherwise stream its whole cache through 1 SM.
  int64_t chooseSplits(AttentionOp op) const {
    // One warp per (batch, KV head, query): it serves the whole GQA group.
    int64_t tasks = op.getBatch() * op.getNumKVHeads() * op.getNumQueries();
    int64_t ctas = llvm::divideCeilSigned(tasks, int64_t(warps));
    int64_t keys = op.getNumCacheKeys() + op.getNumBufferKeys();
    int64_t wanted = llvm::divideCeilSigned(sms * int64_t(ctasPerSM), ctas);
    int64_t affordable = std::max<int64_t>(1, keys / minKeysPerSplit);
    return std::max<int64_t>(1, std::min(wanted, affordable));
  }

  enum class TileScope { decode, all, none };
  /// Whether a static `op` goes through the tile layer (tile-layer): decode
  /// (at most 16 queries a sequence, 16 int8 ones too, which the prefill
  /// kernels would take: H200, B3 Hq16 Hkv4 d64 N555, 11.7 us on the tile
  /// layer against 15.5 on the wgmma kernel, gpu-check's
  /// decode_nq16_noncausal_d64 in two calls) that the GPU lowering of the
  /// tile ops covers, everything the layer can express, or nothing.
  bool takesTileLayer(AttentionOp op, TileScope scope) const {
    switch (scope) {
    case TileScope::decode:
      return whyNotGpuDecodeTiles(op).empty();
    case TileScope::all:
      return whyNotDecodeTiles(op).empty();
    case TileScope::none:
      return false;
    }
    llvm_unreachable("TileScope");
  }

  /// The SMs the heuristics fill: num-sms, or the chip's.
  int64_t sms = 0;
  /// The chip's limits.
  ChipInfo chipInfo = kSm90a;

  void runOnOperation() override {
    std::optional<ChipInfo> info = lookupChip(chip);
    if (!info) {
      emitError(getOperation().getLoc())
          << "qattn-tile: unknown chip '" << chip << "'; qattn has kernels for "
          << knownChips();
      return signalPassFailure();
    }
    sms = numSMs > 0 ? int64_t(numSMs) : info->numSMs;
    chipInfo = *info;
    if (failed(GpuTilingAttr::verifyInvariants(
            [&] {
              return mlir::emitError(getOperation().getLoc(), "qattn-tile: ");
            },
            warps, splits > 0 ? int64_t(splits) : 1, keysPerStep,
            GpuKernel::rows,
            /*stages=*/1, PvOperands::f16, TileProducer::none)) ||
        splits < 0 || numSMs < 0 || ctasPerSM < 1 || minKeysPerSplit < 1 ||
        decodeMinKeysPerSplit < 1) {
      mlir::emitError(getOperation().getLoc(), "qattn-tile: invalid options");
      return signalPassFailure();
    }
    if (tileKeys != 0 && tileKeys != 16 && tileKeys != 32) {
      emitError(getOperation().getLoc())
          << "qattn-tile: tile-keys must be 0, 16 or 32, got "
          << int64_t(tileKeys);
      return signalPassFailure();
    }
    if (gridWarpsPerSM < 0 || gridWarpsPerSM > 32) {
      emitError(getOperation().getLoc())
          << "qattn-tile: grid-warps-per-sm must be in [0, 32], got "
          << int64_t(gridWarpsPerSM);
      return signalPassFailure();
    }
    if (!(lazyMax == -1.0 || (lazyMax >= 0.0 && lazyMax <= 10.0))) {
      emitError(getOperation().getLoc())
          << "qattn-tile: lazy-max must be -1 or in [0, 10], got " << lazyMax;
      return signalPassFailure();
    }
    std::optional<TileScope> scope =
        llvm::StringSwitch<std::optional<TileScope>>(tileLayer)
            .Case("decode", TileScope::decode)
            .Case("all", TileScope::all)
            .Case("none", TileScope::none)
            .Default(std::nullopt);
    if (!scope) {
      emitError(getOperation().getLoc())
          << "qattn-tile: tile-layer must be decode, all or none, got '"
          << tileLayer << "'";
      return signalPassFailure();
    }
    // The serving form (lengths, pages, dynamic sizes) goes through the
    // tile layer; static attentions as `scope` says.
    SmallVector<AttentionOp> tiled;
    WalkResult inexpressible = getOperation()->walk([&](AttentionOp op) {
      bool generic = op.isShapeGeneric();
      if (!generic) {
        if (op.getGpuTilingAttr() || op.getBatch() < 1)
          return WalkResult::advance();
        if (takesTileLayer(op, *scope)) {
          tiled.push_back(op);
          return WalkResult::advance();
        }
        // Decode has one GPU path, the tile layer (tile-layer=none asks for
        // the warp kernel instead, for comparisons).
        if (*scope != TileScope::none &&
            op.getNumQueries() <= kMaxDecodeQueries) {
          op.emitOpError() << "is decode (at most " << kMaxDecodeQueries
                           << " queries a sequence), whose GPU kernels are "
                              "the tile layer's, which "
                           << whyNotGpuDecodeTiles(op);
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      }
      std::string why = whyNotDecodeTiles(op);
      if (why.empty()) {
        tiled.push_back(op);
      } else {
        op.emitOpError() << "with per-sequence lengths, a page table or "
                            "dynamic sizes needs the tile layer, which "
                            "cannot express it yet: "
                         << why;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (inexpressible.wasInterrupted())
      return signalPassFailure();
    for (AttentionOp op : tiled) {
      // The grid's splits follow the batch and the cache's capacity
      // (DecodeTiler::shapeGenericSplits: computed at run time where they
      // are dynamic, folded where both are static). Not the decode kernel's
      // heuristic, which fills 16 warps an SM where the grid kernel holds 12
      // (B8 N32K: 33 splits, 1.33 waves).
      DecodeSplits rule{splits, chipInfo, sms, decodeMinKeysPerSplit};
      tileDecodeAttention(
          op, rule,
          {tileKeys, lazyMax, headsFastest, gridWarpsPerSM, balanceSplits});
    }
    WalkResult result = getOperation()->walk([&](AttentionOp op) {
      if (op.getGpuTilingAttr())
        return WalkResult::advance();
      if (op.getBatch() < 1) {
        op.emitOpError() << "expected a batch of at least 1 for the GPU "
                            "kernels, got "
                         << op.getBatch();
        return WalkResult::interrupt();
      }
      GpuKernel kernel = GpuKernel::rows;
      if (useMma && fitsMmaKernel(op))
        kernel = useWgmma ? GpuKernel::wgmma : GpuKernel::mma;
      int64_t s = splits > 0 ? static_cast<int64_t>(splits) : chooseSplits(op);
      LLVM_DEBUG(llvm::dbgs() << "qattn-tile: " << op.getLoc()
                              << " kernel=" << stringifyGpuKernel(kernel)
                              << " warps=" << warps << " splits=" << s << "\n");
      // The tensor-core kernel covers all keys per CTA; SAS needs each row's
      // final max in one warp.
      bool prefill = kernel == GpuKernel::mma || kernel == GpuKernel::wgmma;
      if (prefill || op.getSoftmaxOrDefault().getMode() != SoftmaxMode::exact)
        s = 1;
      // fp8 P.V only where V's stage-1 scale is one per key tile.
      PvOperands pv = PvOperands::f16;
      if (pvE4m3 && kernel == GpuKernel::wgmma && op.whyNotE4m3PV().empty())
        pv = PvOperands::e4m3;
      // The prefill kernel: 4 warps (64 query rows) per CTA, so that several
      // CTAs share an SM and one's softmax overlaps another's mma (mma.sync
      // on the H200 at B4 H32 N4K d128: 3656 us against 4487 us with 8
      // warps), except where twoWarpgroups; both tensor-core kernels overlap
      // copies with math 2 deep.
      int64_t w = prefill ? kMmaWarps : int64_t(warps);
      if (twoWarpgroups(op, kernel, pv))
        w = 2 * kMmaWarps;
      // The wgmma kernel at d = 64 runs its overlapped loop, which wants 3+
      // stages (the serial loop fails there); 4: on the H200 at B16 H16 N1K
      // d64, 242 us against 267 us with 3 and 282 us with mma.sync.
      int64_t stages = kernel == GpuKernel::rows ? 1 : 2;
      if (kernel == GpuKernel::wgmma && op.getHeadDim() != 128)
        stages = kWgmmaStagesBelow128;
      TileProducer producer = TileProducer::none;
      if (producerWarpgroup(op, kernel, pv)) {
        producer = TileProducer::warpgroup;
        w = 2 * kMmaWarps;
        stages = kProducerStages;
      }
      op.setGpuTilingAttr(GpuTilingAttr::get(&getContext(), w, s, keysPerStep,
                                             kernel, stages, pv, producer));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
