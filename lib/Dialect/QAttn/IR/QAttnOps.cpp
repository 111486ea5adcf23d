//===- QAttnOps.cpp - qattn operations and their verifiers ----------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"

#include "ShapeChecks.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;

#define GET_OP_CLASSES
#include "qattn/Dialect/QAttn/IR/QAttnOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shape helpers shared by the verifiers
//===----------------------------------------------------------------------===//

namespace {
/// Sizes of a [B, H, N, d] tensor.
struct BHND {
  int64_t b, h, n, d;
  SmallVector<int64_t> shape() const { return {b, h, n, d}; }
};
} // namespace

/// Checks that `type` is [B, H, N, d] and returns the sizes.
static FailureOr<BHND> getBHND(Operation *op, StringRef name,
                               RankedTensorType type) {
  if (type.getRank() != 4)
    return op->emitOpError() << "expected " << name
                             << " to have rank 4 [B, H, N, d], got " << type;
  ArrayRef<int64_t> s = type.getShape();
  return BHND{s[0], s[1], s[2], s[3]};
}

/// ceil(n / m) of a size that may be dynamic.
static int64_t ceilDivDim(int64_t n, int64_t m) {
  return ShapedType::isDynamic(n) ? ShapedType::kDynamic
                                  : llvm::divideCeilSigned(n, m);
}

/// Refuses dynamic sizes in the operands and results of ops whose lowerings
/// are specialized on static shapes.
static LogicalResult expectStaticShapes(Operation *op) {
  for (Type type : llvm::concat<Type>(op->getOperandTypes(),
                                      op->getResultTypes()))
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && !tensor.hasStaticShape())
      return op->emitOpError()
             << "expected static shapes, got " << tensor
             << " (dynamic sizes are supported by qattn.attention, "
                "qattn.dequantize and qattn.progressive_dequantize)";
  return success();
}

static LogicalResult expectElementType(Operation *op, StringRef name,
                                       RankedTensorType type, Type expected) {
  if (type.getElementType() == expected)
    return success();
  return op->emitOpError() << "expected " << name << " with element type "
                           << expected << ", got " << type;
}

/// Checks that the heads and head dimension of [B, H, N, d] sizes are
/// static and positive (the format's layout derives from them); batch and
/// tokens may be dynamic.
static LogicalResult expectStaticHeads(Operation *op, StringRef name,
                                       const BHND &sizes) {
  if (ShapedType::isDynamic(sizes.h) || ShapedType::isDynamic(sizes.d) ||
      sizes.h <= 0 || sizes.d <= 0)
    return op->emitOpError()
           << "expected " << name
           << " with static, positive heads and head dimension, got "
           << shapeStr(sizes.shape());
  return success();
}

/// Checks stage-1 scales against the data they scale.
static LogicalResult verifyStage1Scales(Operation *op, StringRef name,
                                        RankedTensorType scales,
                                        Stage1Attr scheme, const BHND &data) {
  if (failed(expectShape(op, name, scales, scheme.getScaleShape(data.shape()))))
    return failure();
  return expectElementType(op, name, scales, scheme.getScaleElementType());
}

/// Checks that a stage-2 scheme fits data of sizes `data`.
static LogicalResult verifyStage2Scheme(Operation *op, Stage2Attr scheme,
                                        const BHND &data) {
  if (failed(expectStaticHeads(op, "stage-2 data", data)))
    return failure();
  if (!scheme.fitsHeads(data.h))
    return op->emitOpError()
           << "expected one stage-2 bit width or one per head (" << data.h
           << "), got " << scheme.getBits().size();
  if (data.d % 8 != 0)
    return op->emitOpError() << "expected the head dimension " << data.d
                             << " to be a multiple of 8 for packed codes";
  return success();
}

/// Checks packed codes [B, N, R] and group scales/zeros [B, H, G, d].
static LogicalResult verifyStage2Tensors(Operation *op, Stage2Attr scheme,
                                         const BHND &data,
                                         RankedTensorType codes,
                                         RankedTensorType scales,
                                         RankedTensorType zeros) {
  if (failed(verifyStage2Scheme(op, scheme, data)))
    return failure();
  if (failed(expectShape(op, "codes", codes,
                         {data.b, data.n, scheme.getRowBytes(data.h, data.d)})))
    return failure();
  SmallVector<int64_t> groupShape = {data.b, data.h,
                                     ceilDivDim(data.n, scheme.getGroup()),
                                     data.d};
  if (failed(expectShape(op, "group scales", scales, groupShape)))
    return failure();
  return expectShape(op, "zero points", zeros, groupShape);
}

static LogicalResult verifyBlockHoldsGroups(Operation *op, Stage1Attr s1,
                                            Stage2Attr s2) {
  if (s1.getBlock() % s2.getGroup() == 0)
    return success();
  return op->emitOpError() << "expected stage-2 group size " << s2.getGroup()
                           << " to divide the stage-1 block size "
                           << s1.getBlock();
}

//===----------------------------------------------------------------------===//
// QuantizeOp / DequantizeOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyStage1Op(Operation *op, RankedTensorType floatType,
                                    RankedTensorType dataType,
                                    RankedTensorType scalesType,
                                    Stage1Attr scheme) {
  FailureOr<BHND> sizes = getBHND(op, "data", dataType);
  if (failed(sizes) || failed(expectStaticHeads(op, "data", *sizes)) ||
      failed(expectShape(op, "float tensor", floatType, dataType.getShape())))
    return failure();
  return verifyStage1Scales(op, "scales", scalesType, scheme, *sizes);
}

LogicalResult QuantizeOp::verify() {
  if (failed(expectStaticShapes(*this)))
    return failure();
  return verifyStage1Op(*this, getInput().getType(), getData().getType(),
                        getScales().getType(), getScheme());
}

LogicalResult DequantizeOp::verify() {
  return verifyStage1Op(*this, getResult().getType(), getData().getType(),
                        getScales().getType(), getScheme());
}

//===----------------------------------------------------------------------===//
// ProgressiveQuantizeOp / ProgressiveDequantizeOp
//===----------------------------------------------------------------------===//

LogicalResult ProgressiveQuantizeOp::verify() {
  if (failed(expectStaticShapes(*this)))
    return failure();
  FailureOr<BHND> sizes = getBHND(*this, "input", getInput().getType());
  if (failed(sizes))
    return failure();
  return verifyStage2Tensors(*this, getScheme(), *sizes, getCodes().getType(),
                             getScales().getType(), getZeros().getType());
}

LogicalResult ProgressiveDequantizeOp::verify() {
  FailureOr<BHND> sizes = getBHND(*this, "result", getResult().getType());
  if (failed(sizes))
    return failure();
  return verifyStage2Tensors(*this, getScheme(), *sizes, getCodes().getType(),
                             getScales().getType(), getZeros().getType());
}

//===----------------------------------------------------------------------===//
// SmoothKeysOp
//===----------------------------------------------------------------------===//

LogicalResult SmoothKeysOp::verify() {
  if (failed(expectStaticShapes(*this)))
    return failure();
  FailureOr<BHND> in = getBHND(*this, "input", getInput().getType());
  if (failed(in) || failed(expectShape(*this, "smoothed keys",
                                       getSmoothed().getType(), in->shape())))
    return failure();
  SmallVector<int64_t> meanShape = {in->b, in->h, in->d};
  if (failed(expectShape(*this, "mean", getMean().getType(), meanShape)))
    return failure();
  std::optional<ArrayRef<int64_t>> calibration = getCalibration();
  if (static_cast<bool>(getGivenMean()) == calibration.has_value())
    return emitOpError() << "expected either a calibration token range or a "
                            "given mean (using), not "
                         << (calibration ? "both" : "neither");
  if (Value given = getGivenMean())
    return expectShape(*this, "given mean",
                       cast<RankedTensorType>(given.getType()), meanShape);
  if (calibration->size() != 2)
    return emitOpError() << "expected a calibration range [start, end) of 2 "
                            "tokens, got "
                         << calibration->size() << " values";
  int64_t start = (*calibration)[0], end = (*calibration)[1];
  if (start < 0 || start >= end || end > in->n)
    return emitOpError() << "expected a non-empty calibration range [" << start
                         << ", " << end << ") inside the " << in->n
                         << " input tokens";
  return success();
}

//===----------------------------------------------------------------------===//
// BufferAppendOp / BufferFlushOp
//===----------------------------------------------------------------------===//

LogicalResult BufferAppendOp::verify() {
  if (failed(expectStaticShapes(*this)))
    return failure();
  FailureOr<BHND> buf = getBHND(*this, "buffer", getBuffer().getType());
  FailureOr<BHND> in;
  if (failed(buf) ||
      failed(in = getBHND(*this, "input", getInput().getType())))
    return failure();
  if (in->b != buf->b || in->h != buf->h || in->d != buf->d)
    return emitOpError() << "expected input " << getInput().getType()
                         << " to match the buffer " << getBuffer().getType()
                         << " in batch, heads and head dimension";
  if (in->n > buf->n)
    return emitOpError() << "expected at most " << buf->n
                         << " new tokens (the buffer size), got " << in->n;
  // A constant position is checked here rather than at run time.
  APInt pos;
  if (matchPattern(getPosition(), m_ConstantInt(&pos)) &&
      (pos.isNegative() || pos.getSExtValue() > buf->n - in->n))
    return emitOpError() << "expected a position in [0, " << buf->n - in->n
                         << "] for " << in->n << " tokens into a buffer of "
                         << buf->n << ", got " << pos.getSExtValue();
  return expectShape(*this, "scale", getScale().getType(), {buf->b, buf->h});
}

LogicalResult BufferFlushOp::verify() {
  if (failed(expectStaticShapes(*this)))
    return failure();
  FailureOr<BHND> buf = getBHND(*this, "buffer", getBuffer().getType());
  if (failed(buf) ||
      failed(expectShape(*this, "scale", getScale().getType(),
                         {buf->b, buf->h})))
    return failure();
  Stage1Attr s1 = getStage1();
  Stage2Attr s2 = getStage2();
  if (failed(verifyBlockHoldsGroups(*this, s1, s2)))
    return failure();
  if (buf->n % s1.getBlock() != 0)
    return emitOpError() << "expected the buffer size " << buf->n
                         << " to be a multiple of the stage-1 block size "
                         << s1.getBlock();
  RankedTensorType codes = getCodes().getType();
  if (codes.getRank() != 3)
    return emitOpError() << "expected codes of rank 3 [B, N, R], got "
                         << codes;
  BHND cache{buf->b, buf->h, codes.getDimSize(1), buf->d};
  if (cache.n < buf->n)
    return emitOpError() << "expected a cache of at least " << buf->n
                         << " tokens (the buffer size), got " << cache.n;
  if (failed(verifyStage2Tensors(*this, s2, cache, codes,
                                 getScales().getType(), getZeros().getType())))
    return failure();
  APInt pos;
  if (matchPattern(getPosition(), m_ConstantInt(&pos))) {
    int64_t p = pos.getSExtValue();
    if (pos.isNegative() || p > cache.n - buf->n || p % s1.getBlock() != 0)
      return emitOpError() << "expected a position that is a multiple of the "
                              "stage-1 block "
                           << s1.getBlock() << " in [0, " << cache.n - buf->n
                           << "] for a buffer of " << buf->n
                           << " tokens into a cache of " << cache.n
                           << ", got " << p;
  }
  return verifyStage1Scales(*this, "block scales", getBlockScales().getType(),
                            s1, cache);
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

float AttentionOp::getSoftmaxScale() {
  if (FloatAttr s = getScaleAttr())
    return s.getValue().convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

SoftmaxAttr AttentionOp::getSoftmaxOrDefault() {
  if (SoftmaxAttr s = getSoftmaxAttr())
    return s;
  return SoftmaxAttr::get(getContext(), SoftmaxMode::exact, APFloat(-6.0), 2);
}

int64_t AttentionOp::getNumKVHeads() {
  return getKScales().getType().getDimSize(1);
}

int64_t AttentionOp::getNumCacheKeys() {
  // Stage-2 codes are [B, N, R]; stage-1 data is [B, H, N, d].
  RankedTensorType k = getK().getType();
  return getKStage2() ? k.getDimSize(1) : k.getDimSize(2);
}

bool AttentionOp::isShapeGeneric() {
  auto dynamic = [](Type type) {
    return !cast<ShapedType>(type).hasStaticShape();
  };
  return getKvLens() || getPageTable() ||
         llvm::any_of(getOperandTypes(), dynamic) ||
         dynamic(getResult().getType());
}

int64_t AttentionOp::getNumBufferKeys() {
  return getKBuffer() ? getKBuffer().getType().getDimSize(2) : 0;
}

std::string AttentionOp::whyNotMmaKernel() {
  auto blockScales = [](Stage1Attr s) {
    return s && s.getGranularity() == Granularity::block;
  };
  auto uniform = [](Stage2Attr s) { return !s || s.getBits().size() == 1; };
  int64_t d = getHeadDim();
  if (d != 64 && d != 128)
    return "expected a head dimension of 64 or 128, got " + std::to_string(d);
  if (!getQScales() || !blockScales(getQStage1Attr()))
    return "expected BPQ int8 queries with block scales";
  if (!blockScales(getKStage1()))
    return "expected keys with block stage-1 scales";
  if (!uniform(getKStage2Attr()) || !uniform(getVStage2Attr()))
    return "expected one stage-2 width for all heads";
  if (getKBuffer())
    return "a decode buffer is not supported";
  if (getSoftmaxOrDefault().getMode() != SoftmaxMode::exact)
    return "expected the exact softmax";
  return "";
}

std::string AttentionOp::whyNotE4m3PV() {
  Stage1Attr v = getVStage1();
  if (!v || v.getGranularity() != Granularity::block || v.getBlock() % 64 != 0)
    return "expected V stage-1 scales per block of a multiple of 64 keys";
  return "";
}

namespace {
/// The operands and attributes that describe one of K and V.
struct KVOperands {
  StringRef name;
  Value data, scales, groupScales, zeros;
  Stage1Attr stage1;
  Stage2Attr stage2;
};
} // namespace

/// Verifies one of K/V and returns its [B, Hkv, N, d] sizes; in the paged
/// form B counts the pool's pages and N is the page size, and `batch` is
/// null (any).
static FailureOr<BHND> verifyKV(Operation *op, const KVOperands &kv,
                                std::optional<int64_t> batch,
                                int64_t headDim) {
  auto scales = cast<RankedTensorType>(kv.scales.getType());
  auto data = cast<RankedTensorType>(kv.data.getType());
  if (scales.getRank() < 3)
    return op->emitOpError() << "expected " << kv.name
                             << " scales of rank 3 or 4, got " << scales;
  if (ShapedType::isDynamic(scales.getDimSize(1)) || scales.getDimSize(1) <= 0)
    return op->emitOpError() << "expected " << kv.name
                             << " scales with a static, positive number of "
                                "KV heads, got "
                             << scales;
  bool hasGroupTensors = kv.groupScales && kv.zeros;
  if (static_cast<bool>(kv.stage2) != hasGroupTensors ||
      static_cast<bool>(kv.groupScales) != static_cast<bool>(kv.zeros))
    return op->emitOpError()
           << "expected " << kv.name
           << " group scales and zero points exactly when its stage-2 scheme "
              "is given";
  BHND sizes{batch.value_or(data.getDimSize(0)), scales.getDimSize(1), 0,
             headDim};
  if (kv.stage2) {
    if (data.getRank() != 3)
      return op->emitOpError() << "expected " << kv.name
                               << " codes of rank 3 [B, N, R], got " << data;
    sizes.n = data.getDimSize(1);
    if (failed(verifyBlockHoldsGroups(op, kv.stage1, kv.stage2)) ||
        failed(verifyStage2Tensors(
            op, kv.stage2, sizes, data,
            cast<RankedTensorType>(kv.groupScales.getType()),
            cast<RankedTensorType>(kv.zeros.getType()))))
      return failure();
  } else {
    if (data.getRank() != 4)
      return op->emitOpError() << "expected " << kv.name
                               << " data of rank 4 [B, H, N, d], got " << data;
    sizes.n = data.getDimSize(2);
    if (failed(expectShape(op, (kv.name + " data").str(), data, sizes.shape())))
      return failure();
  }
  if (failed(verifyStage1Scales(op, (kv.name + " scales").str(), scales,
                                kv.stage1, sizes)))
    return failure();
  return sizes;
}

LogicalResult AttentionOp::verify() {
  FailureOr<BHND> out = getBHND(*this, "result", getResult().getType());
  if (failed(out))
    return failure();
  if (ShapedType::isDynamic(out->h) || ShapedType::isDynamic(out->n) ||
      ShapedType::isDynamic(out->d) || out->d <= 0 || out->h <= 0 ||
      out->n <= 0)
    return emitOpError() << "expected static, positive query heads, queries "
                            "and head dimension, got "
                         << getResult().getType();

  // Query: float, or stage-1 int8 with scales and a scheme.
  RankedTensorType q = getQ().getType();
  if (failed(expectShape(*this, "query", q, out->shape())))
    return failure();
  bool qIsInt = q.getElementType().isInteger(8);
  if (qIsInt != static_cast<bool>(getQScales()) ||
      qIsInt != static_cast<bool>(getQStage1Attr()))
    return emitOpError() << "expected query scales and a q_stage1 scheme "
                            "exactly when the query is int8, got "
                         << q;
  if (qIsInt && failed(verifyStage1Scales(*this, "query scales",
                                          getQScales().getType(),
                                          getQStage1Attr(), *out)))
    return failure();

  // Keys and values: per batch, or a pool of pages.
  bool paged = static_cast<bool>(getPageTable());
  if (paged && !getKvLens())
    return emitOpError() << "expected kv_lens with a page table";
  std::optional<int64_t> kvBatch;
  if (!paged)
    kvBatch = out->b;
  FailureOr<BHND> k = verifyKV(*this,
                               {"key", getK(), getKScales(), getKGroupScales(),
                                getKZeros(), getKStage1(), getKStage2Attr()},
                               kvBatch, out->d);
  if (failed(k))
    return failure();
  FailureOr<BHND> v = verifyKV(*this,
                               {"value", getV(), getVScales(),
                                getVGroupScales(), getVZeros(), getVStage1(),
                                getVStage2Attr()},
                               kvBatch, out->d);
  if (failed(v))
    return failure();
  if (k->h != v->h || !compatibleDim(k->n, v->n) || !compatibleDim(k->b, v->b))
    return emitOpError() << "expected keys and values with equal "
                         << (paged ? "pages, heads and page size" : "heads and tokens")
                         << ", got " << shapeStr(k->shape()) << " and "
                         << shapeStr(v->shape());
  if (out->h % k->h != 0)
    return emitOpError() << "expected the query heads " << out->h
                         << " to be a multiple of the KV heads " << k->h;
  int64_t pageSize = k->n;
  if (paged) {
    if (ShapedType::isDynamic(pageSize) || pageSize <= 0)
      return emitOpError() << "expected a static, positive page size (the "
                              "token dimension of the K/V pages), got "
                           << shapeStr(k->shape());
    for (Stage1Attr s1 : {getKStage1(), getVStage1()})
      if (pageSize % s1.getBlock() != 0)
        return emitOpError() << "expected the page size " << pageSize
                             << " to be a multiple of the stage-1 block size "
                             << s1.getBlock();
  }

  // Per-sequence lengths and the page table.
  if (Value lens = getKvLens())
    if (failed(expectShape(*this, "kv_lens",
                           cast<RankedTensorType>(lens.getType()), {out->b})))
      return failure();
  if (paged) {
    auto table = cast<RankedTensorType>(getPageTable().getType());
    if (table.getRank() != 2 || !compatibleDim(table.getDimSize(0), out->b))
      return emitOpError() << "expected a page table of shape [B, max pages] "
                              "with B = "
                           << (ShapedType::isDynamic(out->b)
                                   ? std::string("?")
                                   : std::to_string(out->b))
                           << ", got " << table;
  }

  // Decode buffers: all four operands or none.
  int numBufferOperands = !!getKBuffer() + !!getKBufferScale() +
                          !!getVBuffer() + !!getVBufferScale();
  int64_t bufferTokens = 0;
  if (numBufferOperands != 0) {
    if (numBufferOperands != 4)
      return emitOpError() << "expected key and value buffers with their "
                              "scales, or no buffers";
    FailureOr<BHND> kb = getBHND(*this, "key buffer", getKBuffer().getType());
    if (failed(kb))
      return failure();
    bufferTokens = kb->n;
    if (ShapedType::isDynamic(bufferTokens) || bufferTokens <= 0)
      return emitOpError() << "expected a static, positive buffer size, got "
                           << getKBuffer().getType();
    BHND expected{out->b, k->h, bufferTokens, out->d};
    if (failed(expectShape(*this, "key buffer", getKBuffer().getType(),
                           expected.shape())) ||
        failed(expectShape(*this, "value buffer", getVBuffer().getType(),
                           expected.shape())) ||
        failed(expectShape(*this, "key buffer scale",
                           getKBufferScale().getType(), {out->b, k->h})) ||
        failed(expectShape(*this, "value buffer scale",
                           getVBufferScale().getType(), {out->b, k->h})))
      return failure();
    if (paged && bufferTokens != pageSize)
      return emitOpError() << "expected the buffer (the tail page) to hold "
                              "one page of "
                           << pageSize << " tokens, got " << bufferTokens;
    // With lengths a full buffer has been flushed: the cache ends at a
    // whole number of buffers, so of blocks.
    if (getKvLens())
      for (Stage1Attr s1 : {getKStage1(), getVStage1()})
        if (bufferTokens % s1.getBlock() != 0)
          return emitOpError()
                 << "expected the buffer size " << bufferTokens
                 << " to be a multiple of the stage-1 block size "
                 << s1.getBlock() << " with kv_lens";
  }

  if (getCausal() && !getKvLens() && !ShapedType::isDynamic(k->n) &&
      out->n > k->n + bufferTokens)
    return emitOpError() << "expected at most as many queries (" << out->n
                         << ") as keys (" << k->n + bufferTokens
                         << ") for causal attention";
  if (FloatAttr s = getScaleAttr()) {
    float value = s.getValue().convertToFloat();
    if (!std::isfinite(value) || value == 0.0f)
      return emitOpError() << "expected a finite non-zero softmax scale, got "
                           << value;
  }
  return success();
}
