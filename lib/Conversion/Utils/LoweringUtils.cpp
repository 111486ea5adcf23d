//===- LoweringUtils.cpp - loop and buffer builders ---------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Conversion/LoweringUtils.h"
#include "qattn/Conversion/FormatMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

void mlir::qattn::forRange(ImplicitLocOpBuilder &b, Value lb, Value ub,
                           function_ref<void(Value)> body) {
  auto loop =
      scf::ForOp::create(b, lb, ub, arith::ConstantIndexOp::create(b, 1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVar());
}

SmallVector<Value> mlir::qattn::reduceRange(
    ImplicitLocOpBuilder &b, Value lb, Value ub, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(
      b, lb, ub, arith::ConstantIndexOp::create(b, 1), init,
      [&](OpBuilder &nested, Location, Value iv, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        scf::YieldOp::create(b, body(iv, acc));
      });
  return loop.getResults();
}

Value mlir::qattn::reduceRange1(ImplicitLocOpBuilder &b, Value lb, Value ub,
                                Value init,
                                function_ref<Value(Value, Value)> body) {
  return reduceRange(b, lb, ub, init,
                     [&](Value iv, ValueRange acc) -> SmallVector<Value> {
                       return {body(iv, acc.front())};
                     })
      .front();
}

static void forEachIndexFrom(ImplicitLocOpBuilder &b, ArrayRef<int64_t> sizes,
                             function_ref<void(ValueRange)> body,
                             SmallVector<Value> &ivs) {
  if (ivs.size() == sizes.size())
    return body(ivs);
  mlir::qattn::forRange(b, arith::ConstantIndexOp::create(b, 0),
           arith::ConstantIndexOp::create(b, sizes[ivs.size()]),
           [&](Value iv) {
             ivs.push_back(iv);
             forEachIndexFrom(b, sizes, body, ivs);
             ivs.pop_back();
           });
}

void mlir::qattn::forEachIndex(ImplicitLocOpBuilder &b, ArrayRef<int64_t> sizes,
                               function_ref<void(ValueRange)> body) {
  SmallVector<Value> ivs;
  forEachIndexFrom(b, sizes, body, ivs);
}

static void forEachIndexFrom(ImplicitLocOpBuilder &b, ValueRange sizes,
                             function_ref<void(ValueRange)> body,
                             SmallVector<Value> &ivs) {
  if (ivs.size() == sizes.size())
    return body(ivs);
  mlir::qattn::forRange(b, arith::ConstantIndexOp::create(b, 0),
                        sizes[ivs.size()], [&](Value iv) {
                          ivs.push_back(iv);
                          forEachIndexFrom(b, sizes, body, ivs);
                          ivs.pop_back();
                        });
}

void mlir::qattn::forEachIndex(ImplicitLocOpBuilder &b, ValueRange sizes,
                               function_ref<void(ValueRange)> body) {
  SmallVector<Value> ivs;
  forEachIndexFrom(b, sizes, body, ivs);
}

SmallVector<Value> mlir::qattn::sizesOf(ImplicitLocOpBuilder &b, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<Value> sizes;
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    sizes.push_back(ShapedType::isDynamic(size)
                        ? memref::DimOp::create(b, buffer, i).getResult()
                        : arith::ConstantIndexOp::create(b, size).getResult());
  return sizes;
}

void mlir::qattn::ifThen(ImplicitLocOpBuilder &b, Value cond,
                         function_ref<void()> then) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  then();
}

Value mlir::qattn::selectPerHead(ImplicitLocOpBuilder &b, Value hk,
                                 int64_t heads,
                                 function_ref<int64_t(int64_t)> value) {
  Value v = arith::ConstantIndexOp::create(b, value(0));
  for (int64_t h = 1; h < heads; ++h) {
    Value is = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, hk,
                                     arith::ConstantIndexOp::create(b, h));
    v = arith::SelectOp::create(
        b, is, arith::ConstantIndexOp::create(b, value(h)), v);
  }
  return v;
}

MemRefType mlir::qattn::memrefOf(RankedTensorType type) {
  return MemRefType::get(type.getShape(), type.getElementType());
}

Value mlir::qattn::toBuffer(ImplicitLocOpBuilder &b, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(b, memrefOf(type), tensor,
                                           /*read_only=*/true);
}

Value mlir::qattn::allocFor(ImplicitLocOpBuilder &b, Type tensorType,
                            ValueRange sizes) {
  auto type = cast<RankedTensorType>(tensorType);
  SmallVector<Value> dynamic;
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(size))
      dynamic.push_back(sizes[i]);
  return memref::AllocOp::create(b, memrefOf(type), dynamic);
}

Value mlir::qattn::toTensor(ImplicitLocOpBuilder &b, Value buffer,
                            Type tensorType) {
  return bufferization::ToTensorOp::create(b, tensorType, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

Value mlir::qattn::load(ImplicitLocOpBuilder &b, Value buffer, ValueRange idx) {
  return memref::LoadOp::create(b, buffer, idx);
}

void mlir::qattn::store(ImplicitLocOpBuilder &b, Value v, Value buffer,
                        ValueRange idx) {
  memref::StoreOp::create(b, v, buffer, idx);
}

Value mlir::qattn::addIdx(ImplicitLocOpBuilder &b, Value x, Value y) {
  return arith::AddIOp::create(b, x, y);
}

Value mlir::qattn::mulIdx(ImplicitLocOpBuilder &b, Value x, int64_t c) {
  return arith::MulIOp::create(b, x, arith::ConstantIndexOp::create(b, c));
}

Value mlir::qattn::divIdx(ImplicitLocOpBuilder &b, Value x, int64_t c) {
  return arith::DivUIOp::create(b, x, arith::ConstantIndexOp::create(b, c));
}

Value mlir::qattn::remIdx(ImplicitLocOpBuilder &b, Value x, int64_t c) {
  return arith::RemUIOp::create(b, x, arith::ConstantIndexOp::create(b, c));
}

Value mlir::qattn::stage1ScaleAt(ImplicitLocOpBuilder &b, Value scales,
                                 Stage1Attr scheme, Value bi, Value h,
                                 Value token, Value c) {
  SmallVector<Value> idx = {bi, h, divIdx(b, token, scheme.getBlock())};
  if (scheme.getGranularity() == Granularity::channel)
    idx.push_back(c);
  return format::toF32(b, load(b, scales, idx));
}

Value mlir::qattn::balancedChunkKeys(ImplicitLocOpBuilder &b, Value totalKeys,
                                     Value batch, Value chunks,
                                     int64_t tileKeys,
                                     function_ref<Value(Value)> chunkCount) {
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value tile = arith::ConstantIndexOp::create(b, tileKeys);
  // The tiles of a chunk for k chunks: max(1, ceil(W / (max(1, k) T))).
  auto tilesFor = [&](Value k) -> Value {
    Value perChunk =
        arith::MulIOp::create(b, arith::MaxUIOp::create(b, k, one), tile);
    return arith::MaxUIOp::create(
        b, arith::CeilDivUIOp::create(b, totalKeys, perChunk), one);
  };
  auto fitsIn = [&](Value size) -> Value {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ule, chunkCount(size),
                                 chunks);
  };
  Value evenTiles = tilesFor(chunks);
  Value even = arith::MulIOp::create(b, evenTiles, tile);
  auto ifOp = scf::IfOp::create(b, b.getIndexType(), fitsIn(even),
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, even);
    b.setInsertionPointToStart(ifOp.elseBlock());
    // Each sequence's last chunk may be short: with K - B chunks' worth of
    // keys a chunk, their count is below (K - B) + B, so C1 fits. The
    // fewest tiles in (C0, C1] that fit: n(C) falls as C grows.
    Value spare = arith::SubIOp::create(
        b, arith::MaxUIOp::create(b, chunks, batch), batch);
    Value lo = arith::AddIOp::create(b, evenTiles, one);
    Value hi = tilesFor(spare);
    Type index = b.getIndexType();
    auto search =
        scf::WhileOp::create(b, TypeRange{index, index}, ValueRange{lo, hi});
    Block *before = b.createBlock(&search.getBefore(), {}, {index, index},
                                  {b.getLoc(), b.getLoc()});
    scf::ConditionOp::create(b,
                             arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                   before->getArgument(0),
                                                   before->getArgument(1)),
                             before->getArguments());
    Block *after = b.createBlock(&search.getAfter(), {}, {index, index},
                                 {b.getLoc(), b.getLoc()});
    Value low = after->getArgument(0), high = after->getArgument(1);
    Value mid = arith::DivUIOp::create(b, arith::AddIOp::create(b, low, high),
                                       arith::ConstantIndexOp::create(b, 2));
    Value ok = fitsIn(arith::MulIOp::create(b, mid, tile));
    scf::YieldOp::create(
        b, ValueRange{arith::SelectOp::create(
                          b, ok, low, arith::AddIOp::create(b, mid, one)),
                      arith::SelectOp::create(b, ok, mid, high)});
    b.setInsertionPointAfter(search);
    scf::YieldOp::create(
        b, Value(arith::MulIOp::create(b, search.getResult(1), tile)));
  }
  return ifOp.getResult(0);
}
