//===- LoweringUtils.h - loop and buffer builders -------------*- C++ -*-===//
//
// Part of the qattn project.
//
// Small builders for the loop nests and buffers the lowerings emit, so
// pattern bodies read as the math they implement.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_CONVERSION_LOWERINGUTILS_H
#define QATTN_CONVERSION_LOWERINGUTILS_H

#include "qattn/Dialect/QAttn/IR/QAttnDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::qattn {

/// for iv in [lb, ub) { body(iv) }
void forRange(ImplicitLocOpBuilder &b, Value lb, Value ub,
              function_ref<void(Value)> body);

/// acc = init; for iv in [lb, ub) { acc = body(iv, acc) }; return acc
SmallVector<Value> reduceRange(
    ImplicitLocOpBuilder &b, Value lb, Value ub, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body);

/// reduceRange with a single accumulator.
Value reduceRange1(ImplicitLocOpBuilder &b, Value lb, Value ub, Value init,
                   function_ref<Value(Value, Value)> body);

/// if (cond) { then() } (an scf.if without results).
void ifThen(ImplicitLocOpBuilder &b, Value cond, function_ref<void()> then);

/// The index constant value(h) of KV head `hk` for h in [0, heads), picked
/// at run time by a chain of selects (per-head widths and byte offsets).
Value selectPerHead(ImplicitLocOpBuilder &b, Value hk, int64_t heads,
                    function_ref<int64_t(int64_t)> value);

/// A loop nest over [0, sizes[i]) calling body with all induction variables.
void forEachIndex(ImplicitLocOpBuilder &b, ArrayRef<int64_t> sizes,
                  function_ref<void(ValueRange)> body);

/// The same over sizes known only at run time (index values).
void forEachIndex(ImplicitLocOpBuilder &b, ValueRange sizes,
                  function_ref<void(ValueRange)> body);

/// The sizes of a memref as index values: constants where static.
SmallVector<Value> sizesOf(ImplicitLocOpBuilder &b, Value buffer);

/// memref.load / memref.store.
Value load(ImplicitLocOpBuilder &b, Value buffer, ValueRange idx);
void store(ImplicitLocOpBuilder &b, Value v, Value buffer, ValueRange idx);
/// Index arithmetic: x + y, x * c, x / c (unsigned), x % c (unsigned).
Value addIdx(ImplicitLocOpBuilder &b, Value x, Value y);
Value mulIdx(ImplicitLocOpBuilder &b, Value x, int64_t c);
Value divIdx(ImplicitLocOpBuilder &b, Value x, int64_t c);
Value remIdx(ImplicitLocOpBuilder &b, Value x, int64_t c);

/// The stage-1 scale (as f32) of element (bi, h, token, c) of data whose
/// scales are `scales` (c is unused with block granularity).
Value stage1ScaleAt(ImplicitLocOpBuilder &b, Value scales, Stage1Attr scheme,
                    Value bi, Value h, Value token, Value c);

/// The size of qattn.key_chunk's chunks for `totalKeys` keys of `batch`
/// sequences in at most `chunks` chunks of whole `tileKeys`-key tiles: the
/// fewest whole tiles C whose `chunkCount(C)` (the chunks the sequences make
/// of that size) is at most K. C0 = T max(1, ceil(W / (K T))) where it
/// fits, else by bisection over the tiles between C0 and C1 = T max(1,
/// ceil(W / (max(K, B) - B) T)), which always fits. Both lowerings of the
/// op build it here (chunkCount builds its ops where it is called).
Value balancedChunkKeys(ImplicitLocOpBuilder &b, Value totalKeys, Value batch,
                        Value chunks, int64_t tileKeys,
                        function_ref<Value(Value)> chunkCount);

MemRefType memrefOf(RankedTensorType type);
/// A read-only buffer view of a tensor (bufferization.to_buffer).
Value toBuffer(ImplicitLocOpBuilder &b, Value tensor);
/// A fresh buffer shaped like `tensorType`; `sizes` (one per dimension)
/// give its dynamic sizes.
Value allocFor(ImplicitLocOpBuilder &b, Type tensorType,
               ValueRange sizes = {});
/// The tensor of a buffer this lowering filled (restrict, writable).
Value toTensor(ImplicitLocOpBuilder &b, Value buffer, Type tensorType);

} // namespace mlir::qattn

#endif // QATTN_CONVERSION_LOWERINGUTILS_H
