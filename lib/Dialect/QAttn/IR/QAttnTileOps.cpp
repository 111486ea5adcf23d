//===- QAttnTileOps.cpp - verifiers of the tile layer ---------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"

#include "ShapeChecks.h"

using namespace mlir;
using namespace mlir::qattn;

/// Checks that `value` is a static tile of `shape` (`?` entries of `shape`
/// match any size).
static LogicalResult expectTile(Operation *op, StringRef name, Value value,
                                ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!type.hasStaticShape())
    return op->emitOpError() << "expected " << name
                             << " to have a static shape, got " << type;
  return expectShape(op, name, type, shape);
}

static int64_t dimOf(Value value, unsigned i) {
  return cast<RankedTensorType>(value.getType()).getDimSize(i);
}

//===----------------------------------------------------------------------===//
// LoadQueryTileOp
//===----------------------------------------------------------------------===//

LogicalResult LoadQueryTileOp::verify() {
  auto q = getQ().getType();
  if (q.getRank() != 4 || ShapedType::isDynamic(q.getDimSize(3)))
    return emitOpError() << "expected queries [B, Hq, Nq, d] with a static d, got "
                         << q;
  if (getGroup() < 1 || q.getDimSize(1) % getGroup() != 0)
    return emitOpError() << "expected a group that divides the query heads "
                         << q.getDimSize(1) << ", got " << getGroup();
  bool isInt = q.getElementType().isInteger(8);
  if (isInt != static_cast<bool>(getQScales()) ||
      isInt != static_cast<bool>(getQStage1Attr()))
    return emitOpError() << "expected query scales and q_stage1 exactly when "
                            "the queries are int8";
  return expectTile(*this, "tile", getTile(),
                    {ShapedType::kDynamic, q.getDimSize(3)});
}

//===----------------------------------------------------------------------===//
// LoadKVTileOp
//===----------------------------------------------------------------------===//

int64_t LoadKVTileOp::getTokensPerEntry() {
  Value data = getSources().front();
  // Stage-2 codes are [B, N, R]; stage-1 data and buffers [B, H, N, d].
  return dimOf(data, getStage2Attr() ? 1 : 2);
}

LogicalResult LoadKVTileOp::verify() {
  int64_t keys = getKeys();
  if (keys < 1)
    return emitOpError() << "expected a positive tile size, got " << keys;
  bool packed = static_cast<bool>(getStage2Attr());
  bool buffer = !getStage1Attr();
  if (packed && buffer)
    return emitOpError() << "expected stage1 with stage2";
  if (std::optional<FragmentLayout> layout = getLayout();
      layout == FragmentLayout::mma_queries_b)
    return emitOpError() << "expected a key or value fragment layout, got "
                         << stringifyFragmentLayout(*layout);
  size_t parts = packed ? 4 : 2;
  if (getSources().size() != parts || getTile().size() != parts)
    return emitOpError() << "expected " << parts << " sources and " << parts
                         << " results for the "
                         << (packed ? "stage-2" : buffer ? "buffer" : "int8")
                         << " form, got " << getSources().size() << " and "
                         << getTile().size();
  if (buffer && getPageTable())
    return emitOpError() << "expected no page table with the decode buffer";
  Value data = getSources().front();
  auto dataType = cast<RankedTensorType>(data.getType());
  if (dataType.getRank() != (packed ? 3 : 4))
    return emitOpError() << "expected " << (packed ? "codes [B, N, R]"
                                                   : "data [B, H, N, d]")
                         << ", got " << dataType;
  int64_t tokens = getTokensPerEntry();
  if (getPageTable() &&
      (ShapedType::isDynamic(tokens) || tokens % keys != 0))
    return emitOpError() << "expected the tile size " << keys
                         << " to divide the page size, got pages of "
                         << dataType;
  Value scales = getSources()[1];
  int64_t heads = dimOf(scales, 1);
  int64_t d = packed ? dimOf(getSources()[2], 3) : dimOf(data, 3);
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(d))
    return emitOpError() << "expected static heads and head dimension";
  bool channel = !buffer && getStage1Attr().getGranularity() == Granularity::channel;
  SmallVector<int64_t> s1Shape = {keys};
  if (channel)
    s1Shape.push_back(d);
  ValueRange tile = getTile();
  if (packed) {
    Stage2Attr s2 = getStage2Attr();
    int64_t g = s2.getGroup();
    if (keys % g != 0 && g % keys != 0)
      return emitOpError() << "expected the tile size " << keys
                           << " and the stage-2 group " << g
                           << " to divide one another";
    int64_t widest = 0;
    for (int64_t h = 0; h < heads; ++h)
      widest = std::max(widest, d * s2.getBitsOfHead(h) / 8);
    int64_t groups = std::max<int64_t>(1, keys / g);
    return failure(failed(expectTile(*this, "codes tile", tile[0], {keys, widest})) ||
                   failed(expectTile(*this, "group scales tile", tile[1], {groups, d})) ||
                   failed(expectTile(*this, "zero points tile", tile[2], {groups, d})) ||
                   failed(expectTile(*this, "stage-1 scales tile", tile[3], s1Shape)));
  }
  return failure(failed(expectTile(*this, "int8 tile", tile[0], {keys, d})) ||
                 failed(expectTile(*this, "scales tile", tile[1], s1Shape)));
}

//===----------------------------------------------------------------------===//
// DequantizeTileOp
//===----------------------------------------------------------------------===//

LogicalResult DequantizeTileOp::verify() {
  size_t parts = getStage2Attr() ? 4 : 2;
  if (getParts().size() != parts)
    return emitOpError() << "expected " << parts << " tile parts, got "
                         << getParts().size();
  Value scales = getParts().back();
  int64_t keys = dimOf(scales, 0);
  int64_t d = dimOf(getValues(), 1);
  if (getStage2Attr()) {
    if (getStage2Attr().getBits().size() > 1 && !getKvHead())
      return emitOpError() << "expected head(%hk) with per-head widths";
    if (failed(expectTile(*this, "group scales tile", getParts()[1],
                          {ShapedType::kDynamic, d})))
      return failure();
  } else if (failed(expectTile(*this, "int8 tile", getParts()[0], {keys, d}))) {
    return failure();
  }
  return expectTile(*this, "values", getValues(), {keys, d});
}

//===----------------------------------------------------------------------===//
// TileScoresOp / SoftmaxUpdateOp / TileRowMaxOp
//===----------------------------------------------------------------------===//

LogicalResult TileScoresOp::verify() {
  int64_t rows = dimOf(getQueriesTile(), 0), d = dimOf(getQueriesTile(), 1);
  int64_t keys = dimOf(getKeysTile(), 0);
  if (getGroup() < 1 || getQueries() < 1)
    return emitOpError() << "expected a positive group and query count";
  if (failed(expectTile(*this, "keys tile", getKeysTile(), {keys, d})))
    return failure();
  return expectTile(*this, "scores", getScores(), {rows, keys});
}

LogicalResult SoftmaxUpdateOp::verify() {
  int64_t rows = dimOf(getScores(), 0), keys = dimOf(getScores(), 1);
  SoftmaxAttr softmax = getSoftmaxAttr();
  if (softmax && softmax.getMode() != SoftmaxMode::exact && !getFixedMax())
    return emitOpError() << "expected fixed_max with the SAS softmax (its "
                            "terms are defined against the row's final max)";
  if (std::optional<APFloat> lazy = getLazyMax()) {
    if (getFixedMax())
      return emitOpError() << "expected no lazy_max with fixed_max (the max "
                              "is already the row's final one)";
    double t = lazy->convertToDouble();
    if (!(t > 0.0 && t <= 10.0))
      return emitOpError() << "expected lazy_max in (0, 10] (a term is at "
                              "most e^lazy_max, in f16 on the GPU), got "
                           << t;
  }
  int64_t d = dimOf(getValues(), 1);
  return failure(failed(expectTile(*this, "values", getValues(), {keys, d})) ||
                 failed(expectTile(*this, "max", getMax(), {rows})) ||
                 failed(expectTile(*this, "sum", getSum(), {rows})) ||
                 failed(expectTile(*this, "accumulators", getAcc(), {rows, d})));
}

LogicalResult TileRowMaxOp::verify() {
  return expectTile(*this, "max", getMax(), {dimOf(getScores(), 0)});
}

//===----------------------------------------------------------------------===//
// CombineSplitsOp
//===----------------------------------------------------------------------===//

/// The lengths and tile size of balanced key chunks (qattn.key_chunk).
static LogicalResult verifyChunkLengths(Operation *op, Value kvLens,
                                        int64_t tileKeys) {
  auto lens = cast<ShapedType>(kvLens.getType());
  if (!lens.hasRank() || lens.getRank() != 1)
    return op->emitOpError("expected kv_lens of rank 1 (one length a "
                           "sequence), got ")
           << lens;
  if (tileKeys < 1)
    return op->emitOpError("expected tile_keys of at least 1, got ")
           << tileKeys;
  return success();
}

LogicalResult CombineSplitsOp::verify() {
  auto acc = getAcc().getType();
  auto out = getResult().getType();
  if (acc.getRank() != 6 || out.getRank() != 4)
    return emitOpError() << "expected partial accumulators [B, Hkv, RT, S, R, "
                            "d] and a result [B, Hq, Nq, d], got "
                         << acc << " and " << out;
  ArrayRef<int64_t> rows = acc.getShape().drop_back();
  if (failed(expectShape(*this, "partial maxima", getMax().getType(), rows)) ||
      failed(expectShape(*this, "partial sums", getSum().getType(), rows)))
    return failure();
  int64_t g = getGroup();
  if (g < 1 || out.getDimSize(1) != acc.getDimSize(1) * g ||
      out.getDimSize(3) != acc.getDimSize(5))
    return emitOpError() << "expected " << acc.getDimSize(1) << " x " << g
                         << " query heads of d = " << acc.getDimSize(5)
                         << ", got " << out;
  int64_t pairs = g * out.getDimSize(2);
  if (acc.getDimSize(2) * acc.getDimSize(4) < pairs)
    return emitOpError() << "expected row tiles covering the " << pairs
                         << " (query, head) pairs of a KV head, got " << acc;
  if (bool(getKvLens()) != bool(getTileKeysAttr()))
    return emitOpError("expected chunks(kv_lens) and tile_keys together");
  if (!getKvLens())
    return success();
  return verifyChunkLengths(*this, getKvLens(), *getTileKeys());
}

//===----------------------------------------------------------------------===//
// KeyChunkOp
//===----------------------------------------------------------------------===//

LogicalResult KeyChunkOp::verify() {
  return verifyChunkLengths(*this, getKvLens(), getTileKeys());
}
