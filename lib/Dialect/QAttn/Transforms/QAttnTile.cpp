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
constexpr int64_t kDecodeDeepRingStages = 4, kDecodeDeepRingWarps = 4;
// Decode key slices below this many keys (8 steps of 16) cost more in the
// combine than they gain in parallelism.
constexpr int64_t kShortestSplit = 128;

struct QAttnTilePass : qattn::impl::QAttnTileBase<QAttnTilePass> {
  using QAttnTileBase::QAttnTileBase;

  /// Prefill the tensor-core kernel can run, with enough query rows for an
  /// m16 tile.
  static bool fitsMmaKernel(AttentionOp op) {
    return op.whyNotMmaKernel().empty() && op.getNumQueries() >= 16;
  }

  /// What the tensor-core decode kernel handles: packed 2/4-bit K and V in
  /// 16-key aligned groups and blocks with block scales, no decode buffer,
  /// exact softmax, d of 64 or 128, the (query, head) rows of a KV head in a
  /// few 16-row tiles.
  static bool fitsDecodeKernel(AttentionOp op) {
    auto packed = [](Stage2Attr s) {
      return s && s.getGroup() % 16 == 0 &&
             llvm::all_of(s.getBits(),
                          [](int64_t b) { return b == 2 || b == 4; });
    };
    auto blockScales = [](Stage1Attr s) {
      return s && s.getGranularity() == Granularity::block &&
             s.getBlock() % 16 == 0;
    };
    int64_t d = op.getHeadDim();
    return (!op.getQScales() || blockScales(op.getQStage1Attr())) &&
           packed(op.getKStage2Attr()) && packed(op.getVStage2Attr()) &&
           blockScales(op.getKStage1()) && blockScales(op.getVStage1()) &&
           !op.getKBuffer() &&
           op.getSoftmaxOrDefault().getMode() == SoftmaxMode::exact &&
           (d == 64 || d == 128) && decodeRows(op) <= 64;
  }

  /// The decode kernel's rows per KV head: (query, query head) pairs.
  static int64_t decodeRows(AttentionOp op) {
    return op.getNumQueries() * op.getNumQueryHeads() / op.getNumKVHeads();
  }
  /// Its warp tasks: (batch, KV head, 16-row tile).
  static int64_t decodeTasks(AttentionOp op) {
    return op.getBatch() * op.getNumKVHeads() *
           llvm::divideCeilSigned(decodeRows(op), int64_t(16));
  }

  /// Decode kernel: a warp per 16 (query, head) rows of a KV head and key
  /// slice; as many slices as fit `decodeWarpsPerSM` warps on every SM (the
  /// kernel's occupancy), none shorter than the minimum. A shape that gets
  /// fewer than `decodeMinWarps` warps that way (its latency not hidden) takes
  /// shorter slices, down to kShortestSplit keys, to reach that many.
  int64_t chooseDecodeSplits(AttentionOp op) const {
    int64_t tasks = decodeTasks(op);
    int64_t keys = op.getNumCacheKeys();
    // At most one wave: a second, partial one would leave most SMs idle
    // while it runs (B32 N8K: 9 slices, 2304 warps for 2112 places).
    int64_t wanted = sms * int64_t(decodeWarpsPerSM) / tasks;
    int64_t affordable = std::max<int64_t>(1, keys / decodeMinKeysPerSplit);
    int64_t s = std::max<int64_t>(1, std::min(wanted, affordable));
    if (tasks * s < decodeMinWarps)
      s = std::max(
          s, std::min(llvm::divideCeilSigned(int64_t(decodeMinWarps), tasks),
                      keys / kShortestSplit));
    // Slices start at multiples of 16 keys (the kernel side:
    // AttentionShape::keysPerSplit), so some of s slices may get no
    // key (N128K: 264 wanted, 256 of 512 keys): drop them, the combine then
    // merges fewer partial rows.
    int64_t perSplit = llvm::alignTo(llvm::divideCeilSigned(keys, s), 16);
    return std::max<int64_t>(1, llvm::divideCeilSigned(keys, perSplit));
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
            [&] { return mlir::emitError(getOperation().getLoc(), "qattn-tile: "); }, warps,
            splits > 0 ? int64_t(splits) : 1, keysPerStep, GpuKernel::rows,
            /*stages=*/1, PvOperands::f16, TileProducer::none)) ||
        numSMs < 0 || ctasPerSM < 1 || minKeysPerSplit < 1 ||
        decodeWarpsPerSM < 1 || decodeMinKeysPerSplit < 1 ||
        decodeMinWarps < 0) {
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
    // The serving form (lengths, pages, dynamic sizes) goes through the
    // tile layer; with tile-layer, static attentions it can express too.
    SmallVector<AttentionOp> tiled;
    WalkResult inexpressible = getOperation()->walk([&](AttentionOp op) {
      bool generic = op.isShapeGeneric();
      if (!generic &&
          !(tileLayer && !op.getGpuTilingAttr() && op.getBatch() >= 1))
        return WalkResult::advance();
      std::string why = whyNotDecodeTiles(op);
      if (why.empty()) {
        tiled.push_back(op);
      } else if (generic) {
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
      rule.fixed = std::max<int64_t>(0, rule.fixed);
      tileDecodeAttention(op, rule,
                          {tileKeys, lazyMax, headsFastest, gridWarpsPerSM});
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
      else if (useDecode && fitsDecodeKernel(op))
        kernel = GpuKernel::decode;
      int64_t s = splits > 0                    ? static_cast<int64_t>(splits)
                  : kernel == GpuKernel::decode ? chooseDecodeSplits(op)
                                                : chooseSplits(op);
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
      // A decode grid of less than one CTA per SM has few warps to hide the
      // latency of its loads: a deeper ring does (H200, B1 Hkv8 N32K d128:
      // 41.7 us with 4 stages against 43.9 with 2; at 4 CTAs per SM deeper
      // rings gain at most 1% and lose up to 7%: 2-bit, d = 64). 4 warps x 4
      // stages take 45 KB at d = 128, within 48 KB of static shared memory.
      if (kernel == GpuKernel::decode && w <= kDecodeDeepRingWarps &&
          s * llvm::divideCeilSigned(decodeTasks(op), w) < sms)
        stages = kDecodeDeepRingStages;
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
