//===- QAttnPipeline.cpp - pipeline depth of the attention key stream -----===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Dialect/QAttn/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNPIPELINE
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"
} // namespace mlir::qattn

#include "llvm/ADT/StringSwitch.h"

#include <optional>

using namespace mlir;
using namespace mlir::qattn;

// qattn-tile's decode key loops take 2 stages unless told otherwise: each
// tile's loads in flight while the previous tile is scored.
static constexpr int64_t kKeyLoopStages = 2;

/// Modulo variable expansion of a 2-stage pipelined key loop: unrolled by 2
/// (the remainder, at most one step, in an epilogue loop), the n-th tile of
/// the loop lies in ring slot n mod 2 whatever the key it starts at, and
/// each load and wait says which: the prologue's load slot 0; in the
/// unrolled body's copy c (steps 2m + c) the wait slot c and the look-ahead
/// loads slot 1 - c; in the epilogue (step 2M) the wait 0, the loads 1.
static void assignStaticSlots(scf::ForOp loop, ValueRange inits) {
  MLIRContext *ctx = loop.getContext();
  auto slot = [&](int64_t s) {
    return IntegerAttr::get(IntegerType::get(ctx, 64), s);
  };
  // A trip count known here could let the unrolling fold a loop of one
  // step into its block, leaving its tiles without a slot: only loops
  // whose trip count is known at run time alone (every key loop qattn-tile
  // writes: its bounds come from the split and the length).
  if (loop.getStaticTripCount())
    return;
  FailureOr<UnrolledLoopInfo> unrolled = loopUnrollByFactor(loop, 2);
  if (failed(unrolled) || !unrolled->mainLoopOp || !unrolled->epilogueLoopOp)
    return;
  for (Value init : inits)
    if (auto load = init.getDefiningOp<LoadKVTileOp>())
      load->setAttr(kRingSlotAttr, slot(0));
  for (scf::ForOp l : {*unrolled->mainLoopOp, *unrolled->epilogueLoopOp}) {
    // Copy c's loads come before its wait.
    int64_t copy = 0;
    for (Operation &op : l.getBody()->without_terminator()) {
      if (isa<LoadKVTileOp>(op))
        op.setAttr(kRingSlotAttr, slot(1 - copy % 2));
      if (isa<WaitTilesOp>(op))
        op.setAttr(kRingSlotAttr, slot(copy++ % 2));
    }
  }
}

/// Software-pipelines a tile-layer key loop `stages` deep: the tile loads of
/// step `it + stages - 1` are issued in step `it` and carried to their use
/// through the loop's iteration arguments (a ring of `stages - 1` tiles in
/// flight besides the one in use), the first `stages - 1` before the loop;
/// a qattn.wait_tiles after the step's own loads marks where this step's
/// tiles must have arrived, leaving the `stages - 1` later steps' loads in
/// flight. Loads past the loop's end read nothing (their `bound`), so no
/// epilogue is needed.
static void pipelineKeyLoop(scf::ForOp loop, int64_t stages, bool staticSlots) {
  Block *body = loop.getBody();
  // The loads and what they compute their operands from inside the loop;
  // nothing of it may depend on the loop's state, or it cannot run ahead.
  SmallVector<Operation *> loads;
  for (Operation &op : body->without_terminator())
    if (isa<LoadKVTileOp>(op))
      loads.push_back(&op);
  if (loads.empty())
    return;
  BackwardSliceOptions options;
  options.inclusive = true;
  options.omitBlockArguments = true;
  options.filter = [&](Operation *op) { return op->getBlock() == body; };
  llvm::SetVector<Operation *> slice;
  for (Operation *load : loads)
    if (failed(getBackwardSlice(load, &slice, options)))
      return;
  auto isState = [&](Value v) {
    return llvm::is_contained(loop.getRegionIterArgs(), v);
  };
  for (Operation *op : slice)
    if (llvm::any_of(op->getOperands(), isState))
      return;
  SmallVector<Operation *> ahead;
  for (Operation &op : body->without_terminator())
    if (slice.contains(&op))
      ahead.push_back(&op);

  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value lb = loop.getLowerBound(), step = loop.getStep();
  // The loads' results for the step at `iv`, cloned at b's insertion point.
  auto loadsAt = [&](Value iv) {
    IRMapping map;
    map.map(loop.getInductionVar(), iv);
    for (Operation *op : ahead)
      b.clone(*op, map);
    SmallVector<Value> tiles;
    for (Operation *load : loads)
      for (Value r : load->getResults())
        tiles.push_back(map.lookup(r));
    return tiles;
  };
  auto stepOffset = [&](Value iv, int64_t k) -> Value {
    if (k == 0)
      return iv;
    Value kConst = arith::ConstantIndexOp::create(b, loc, k);
    return arith::AddIOp::create(b, loc, iv,
                                 arith::MulIOp::create(b, loc, step, kConst));
  };
  SmallVector<Value> inits(loop.getInitArgs());
  size_t state = inits.size(), perStep = 0;
  for (int64_t k = 0; k + 1 < stages; ++k) {
    SmallVector<Value> tiles = loadsAt(stepOffset(lb, k));
    perStep = tiles.size();
    llvm::append_range(inits, tiles);
  }
  auto piped = scf::ForOp::create(b, loc, lb, loop.getUpperBound(), step, inits);
  piped->setAttrs(loop->getAttrs());
  piped->setAttr(kPipelineStagesAttr, b.getI64IntegerAttr(stages));
  b.setInsertionPointToStart(piped.getBody());
  Value iv = piped.getInductionVar();
  ValueRange args = piped.getRegionIterArgs();
  SmallVector<Value> next = loadsAt(stepOffset(iv, stages - 1));
  ValueRange current = args.slice(state, perStep);
  auto wait = WaitTilesOp::create(b, loc, current.getTypes(), current,
                                  b.getI64IntegerAttr(stages - 1));
  IRMapping map;
  map.map(loop.getInductionVar(), iv);
  for (auto [old, arg] : llvm::zip(loop.getRegionIterArgs(), args.take_front(state)))
    map.map(old, arg);
  size_t at = 0;
  for (Operation *load : loads)
    for (Value r : load->getResults())
      map.map(r, wait.getResult(at++));
  // Everything but the loads, whose tiles now come from the ring (what the
  // loads' operands were computed from stays too, if anything else uses it).
  for (Operation &op : body->without_terminator())
    if (!isa<LoadKVTileOp>(op))
      b.clone(op, map);
  SmallVector<Value> yields;
  for (Value v : body->getTerminator()->getOperands())
    yields.push_back(map.lookupOrDefault(v));
  llvm::append_range(yields, args.drop_front(state + perStep));
  llvm::append_range(yields, next);
  scf::YieldOp::create(b, loc, yields);
  loop.replaceAllUsesWith(piped.getResults().take_front(state));
  loop.erase();
  if (staticSlots && stages == 2)
    assignStaticSlots(piped, inits);
}

namespace {
struct QAttnPipelinePass : qattn::impl::QAttnPipelineBase<QAttnPipelinePass> {
  using QAttnPipelineBase::QAttnPipelineBase;

  void runOnOperation() override {
    // Static slots: where qattn-tile asked for them (auto), everywhere or
    // nowhere.
    std::optional<bool> slotsEverywhere =
        llvm::StringSwitch<std::optional<bool>>(staticSlots)
            .Cases({"true", "on"}, true)
            .Cases({"false", "off"}, false)
            .Default(std::nullopt);
    if (!slotsEverywhere && staticSlots != "auto") {
      mlir::emitError(getOperation().getLoc())
          << "qattn-pipeline: static-slots must be auto, true or false, got '"
          << staticSlots << "'";
      return signalPassFailure();
    }
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
      return signalPassFailure();
    // The tile layer's key loops (qattn-tile's decode grids).
    int64_t stages = numStages > 0 ? int64_t(numStages) : kKeyLoopStages;
    if (stages > 4) {
      mlir::emitError(getOperation().getLoc()) << "qattn-pipeline: expected 1 to 4 stages "
                                    "for a tile-layer key loop, got "
                                 << stages;
      return signalPassFailure();
    }
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kKeyLoopAttr) && !loop->hasAttr(kPipelineStagesAttr))
        loops.push_back(loop);
    });
    if (stages > 1)
      for (scf::ForOp loop : loops)
        pipelineKeyLoop(
            loop, stages,
            slotsEverywhere.value_or(loop->hasAttr(kStaticSlotsAttr)));
  }
};
} // namespace
