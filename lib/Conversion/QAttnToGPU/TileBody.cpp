//===- TileBody.cpp - a decode grid's body, op by op, as a warp's code ----===//
//
// Part of the qattn project.
//
// The body of a decode grid (one warp's program) rewritten op by op into the
// kernel: index arithmetic is cloned, tensor.extract reads the flat buffer,
// the key loops become loops over the lanes' registers (Regs), and each tile
// op goes to its lowering (TileLowering.h). Also WarpProgram's bookkeeping.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/LoweringUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

Value FlatTensor::linearize(ImplicitLocOpBuilder &b, ValueRange idx) const {
  Value at = idx[0];
  for (auto [size, i] :
       llvm::zip(ArrayRef<Value>(sizes).drop_front(), idx.drop_front()))
    at = arith::AddIOp::create(b, arith::MulIOp::create(b, at, size), i);
  return at;
}

Value FlatTensor::stride(ImplicitLocOpBuilder &b, int64_t dim) const {
  Value stride = arith::ConstantIndexOp::create(b, 1);
  for (Value size : ArrayRef<Value>(sizes).drop_front(dim + 1))
    stride = b.createOrFold<arith::MulIOp>(stride, size);
  return stride;
}

WarpProgram::WarpProgram(ImplicitLocOpBuilder &b, int64_t headDim,
                         int64_t rowBlocks, LaneChannels channels)
    : b(b), headDim(headDim), rowBlocks(rowBlocks),
      channels(std::move(channels)) {
  lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  g = div(b, lane, 4);
  t = rem(b, lane, 4);
}

Value WarpProgram::idx(int64_t v) { return indexConst(b, v); }

bool WarpProgram::usableHere(Value v) const {
  Block *def = v.getParentBlock();
  for (Block *at = b.getInsertionBlock(); at;) {
    if (at == def)
      return true;
    Operation *parent = at->getParentOp();
    at = parent ? parent->getBlock() : nullptr;
  }
  return false;
}

Value WarpProgram::reg(Value tile, int64_t i) {
  auto it = lazy.find(tile);
  if (it == lazy.end())
    return regs(tile)[i];
  // Hold the tile: make() may make other lazy tiles' registers.
  std::shared_ptr<LazyRegs> l = it->second;
  if (!l->made[i] || !usableHere(l->made[i]))
    l->made[i] = l->make(i);
  return l->made[i];
}

int64_t WarpProgram::numRegs(Value tile) const {
  auto it = lazy.find(tile);
  return it == lazy.end() ? int64_t(regs(tile).size())
                          : int64_t(it->second->made.size());
}

void WarpProgram::setLazy(Value tile, int64_t count,
                          std::function<Value(int64_t)> make) {
  auto l = std::make_shared<LazyRegs>();
  l->make = std::move(make);
  l->made.resize(count);
  lazy[tile] = std::move(l);
}

Value WarpProgram::accRow(int64_t nb, int64_t c) {
  return add(b, mul(b, t, 2), idx(8 * nb + c));
}

//===----------------------------------------------------------------------===//
// The grid body
//===----------------------------------------------------------------------===//

static bool isTile(Type type) { return isa<RankedTensorType>(type); }


/// A key loop over the registers of the tiles it carries.
static LogicalResult lowerFor(WarpProgram &w, scf::ForOp loop) {
  ImplicitLocOpBuilder &b = w.b;
  SmallVector<Value> init;
  SmallVector<int64_t> counts;
  for (Value v : loop.getInitArgs()) {
    if (isTile(v.getType())) {
      const Regs &r = w.regs(v);
      init.append(r.begin(), r.end());
      counts.push_back(r.size());
    } else {
      init.push_back(w.scalar(v));
      counts.push_back(-1);
    }
  }
  auto flat = scf::ForOp::create(b, w.scalar(loop.getLowerBound()),
                                 w.scalar(loop.getUpperBound()),
                                 w.scalar(loop.getStep()), init);
  // Spreads `flatValues` over `values` as `counts` says.
  auto bind = [&](ValueRange values, ValueRange flatValues) {
    size_t at = 0;
    for (auto [v, n] : llvm::zip(values, counts)) {
      if (n < 0) {
        w.scalars.map(v, flatValues[at++]);
        continue;
      }
      w.tiles[v] = Regs(flatValues.slice(at, n));
      at += n;
    }
  };
  // Tiles in flight in the ring keep their pieces' places through the loop,
  // and after it where it yields them (an unrolled loop's epilogue reads
  // them).
  auto keepInRing = [&](ValueRange from, ValueRange to) {
    for (auto [v, same] : llvm::zip(from, to))
      if (auto ring = w.inRing.find(v); ring != w.inRing.end()) {
        RingTile tile = ring->second; // a copy: inserting may move the map
        w.inRing[same] = std::move(tile);
      }
  };
  keepInRing(loop.getInitArgs(), loop.getRegionIterArgs());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(flat.getBody());
    w.scalars.map(loop.getInductionVar(), flat.getInductionVar());
    bind(loop.getRegionIterArgs(), flat.getRegionIterArgs());
    if (failed(lowerGridBody(w, *loop.getBody())))
      return failure();
    SmallVector<Value> yielded;
    for (Value v : loop.getBody()->getTerminator()->getOperands()) {
      if (!isTile(v.getType())) {
        yielded.push_back(w.scalar(v));
        continue;
      }
      const Regs &r = w.regs(v);
      yielded.append(r.begin(), r.end());
    }
    scf::YieldOp::create(b, yielded);
    for (auto [v, result] : llvm::zip(
             loop.getBody()->getTerminator()->getOperands(), loop.getResults()))
      if (w.sums.contains(v))
        w.sums.insert(result);
  }
  bind(loop.getResults(), flat.getResults());
  keepInRing(loop.getBody()->getTerminator()->getOperands(),
             loop.getResults());
  drainRing(w, loop);
  return success();
}

/// A constant: a scalar cloned, or a splat of the row state or accumulators.
LogicalResult mlir::qattn::tiles::lowerGridConstant(WarpProgram &w,
                                                  arith::ConstantOp op) {
  auto type = dyn_cast<RankedTensorType>(op.getType());
  if (!type) {
    w.scalars.map(op.getResult(), w.b.clone(*op)->getResult(0));
    return success();
  }
  auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
  if (!splat || !type.getElementType().isF32() || type.getRank() > 2)
    return op.emitOpError("inside a decode grid: only splats of the row "
                          "state or the accumulators have a GPU lowering");
  w.tiles[op.getResult()] =
      splatState(w, type, splat.getSplatValue<APFloat>().convertToDouble());
  return success();
}

static LogicalResult lowerOp(WarpProgram &w, Operation &op) {
  ImplicitLocOpBuilder &b = w.b;
  return TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](LoadQueryTileOp o) {
        return lowerLoadQueryTile(w, o), success();
      })
      .Case([&](LoadKVTileOp o) { return lowerLoadKVTile(w, o), success(); })
      .Case([&](DequantizeTileOp o) {
        return lowerDequantizeTile(w, o), success();
      })
      .Case([&](TileScoresOp o) { return lowerTileScores(w, o), success(); })
      .Case([&](TileRowMaxOp o) { return lowerTileRowMax(w, o), success(); })
      .Case([&](SoftmaxUpdateOp o) {
        return lowerSoftmaxUpdate(w, o), success();
      })
      .Case([&](WaitTilesOp o) { return lowerWaitTiles(w, o), success(); })
      .Case([&](KeyChunkOp o) { return lowerKeyChunk(w, o), success(); })
      .Case([&](scf::ForOp o) { return lowerFor(w, o); })
      .Case([&](arith::ConstantOp o) { return lowerGridConstant(w, o); })
      .Case([&](tensor::ExtractOp o) {
        const FlatTensor &t = w.tensor(o.getTensor());
        SmallVector<Value> idx;
        for (Value i : o.getIndices())
          idx.push_back(w.scalar(i));
        w.scalars.map(
            o.getResult(),
            memref::LoadOp::create(b, t.buffer, ValueRange{t.linearize(b, idx)})
                .getResult());
        return success();
      })
      .Case([&](tensor::DimOp o) -> LogicalResult {
        std::optional<int64_t> dim = o.getConstantIndex();
        if (!dim || !w.tensors.contains(o.getSource()))
          return o.emitOpError("inside a decode grid needs a constant "
                               "dimension of a tensor the grid reads");
        w.scalars.map(o.getResult(), w.tensor(o.getSource()).sizes[*dim]);
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        bool scalar = other->getNumRegions() == 0 &&
                      llvm::none_of(other->getOperandTypes(), isTile) &&
                      llvm::none_of(other->getResultTypes(), isTile);
        // Cloned where it stands, so a division by the run-time split count
        // (not speculatable) is as fine as any other effect-free op.
        if (!scalar || !isMemoryEffectFree(other))
          return other->emitOpError(
              "inside a decode grid has no GPU lowering (the grid body may "
              "hold index arithmetic, tensor.extract, scf.for and tile ops)");
        b.clone(*other, w.scalars);
        return success();
      });
}

LogicalResult mlir::qattn::tiles::lowerGridBody(WarpProgram &w, Block &block) {
  for (Operation &op : block.without_terminator())
    if (failed(lowerOp(w, op)))
      return failure();
  return success();
}

