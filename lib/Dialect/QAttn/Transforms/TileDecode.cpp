//===- TileDecode.cpp - decode attention as a grid of tile programs -------===//
//
// Part of the qattn project.
//
// qattn-tile's materialization of decode attention (the serving form: per-
// sequence lengths, a page table, dynamic sizes; and static shapes, see
// the tile-layer option) as tile programs: an scf.forall grid over
// (batch, KV head, row tile, key split), each point loading its query rows,
// then walking its slice of the sequence's keys in tiles of 16 with an
// scf.for whose bounds come from kv_lens (the cache's keys, then the int8
// tail's), and writing partial rows that qattn.combine_splits merges. SAS,
// defined against each row's final max, takes one split and two passes.
// With balance-splits a grid point's (batch, split) is a slot of the
// batch's balanced key chunks instead (qattn.key_chunk), whose sequence it
// then serves.
//
//===----------------------------------------------------------------------===//

#include "TileDecode.h"

#include "qattn/Target/TileCoverage.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;

namespace {
// Keys per tile and rows per row tile: the m16n8k16 fragments of the decode
// kernel (16 keys on the m side, up to 16 (query, head) rows on the n side).
// A tile takes two such key blocks where every stage-2 group, stage-1 block,
// page and buffer is a multiple of 32 keys, or groups are 16 keys and the
// rows one block of 8: the GPU lowering then walks its loop (the loads, the
// row max's shuffles, the rescaling) once per 32 keys. H200, Hq32 Hkv8 d128
// 4-bit g16: B8 N32K 140.8 -> 130.6 us, B1 N32K 39.1 -> 33.8; with two row
// blocks (four queries) the 32-key loop spills: 190.3 -> 213.3.
constexpr int64_t kTileKeys = 16, kWideTileKeys = 32, kTileRows = 16;
// The most key splits of a shape-generic grid (the combine reads each
// split's partial row), unless each split still gets kLongSplitKeys keys.
constexpr int64_t kMaxSplits = 64, kLongSplitKeys = 256;

/// Whether K's or V's stage-2 groups take a lane's own constants on the GPU
/// (tileGpuGroupsPerLane: two groups' a key block, Chip.h's budget).
bool hasGroupsPerLane(AttentionOp op) {
  return llvm::any_of(
      std::array{op.getKStage2Attr(), op.getVStage2Attr()},
      [](Stage2Attr s2) { return s2 && tileGpuGroupsPerLane(s2.getGroup()); });
}

/// The 8-row blocks of (query, head) rows a grid warp covers.
int64_t rowBlocksOf(AttentionOp op) {
  return tileGridRowBlocks(op.getNumQueryHeads() / op.getNumKVHeads() *
                           op.getNumQueries());
}

/// kWideTileKeys where the op's formats are whole wide tiles, else kTileKeys.
int64_t chooseTileKeys(AttentionOp op) {
  auto whole = [](int64_t n) { return n % kWideTileKeys == 0; };
  bool oneRowBlock = rowBlocksOf(op) == 1;
  for (Stage2Attr s2 : {op.getKStage2Attr(), op.getVStage2Attr()})
    if (s2 && !whole(s2.getGroup()) &&
        !(s2.getGroup() == kTileKeys && oneRowBlock))
      return kTileKeys;
  for (Stage1Attr s1 : {op.getKStage1Attr(), op.getVStage1Attr()})
    if (s1 && !whole(s1.getBlock()))
      return kTileKeys;
  if (op.getPageTable() && !whole(op.getNumCacheKeys()))
    return kTileKeys;
  if (op.getKBuffer() && !whole(op.getNumBufferKeys()))
    return kTileKeys;
  return kWideTileKeys;
}

/// The lazy row max's bar, 8 ln 2 (terms at most 2^8, the static decode
/// kernel's). At d = 128 its branch spills (24-132 bytes at 168 registers)
/// and lost while the ring's copies held the kernel back; once they no
/// longer did it gained on the H200 (Nq 4 causal 168.4 -> 151.7 us, B8 N32K
/// 2/4-bit 1-3%; B1 N32K 1% slower; docs/PERF.md).
static double chooseLazyMax(AttentionOp) { return 8.0 * M_LN2; }

/// Whether the cache's key loop asks qattn-pipeline for static ring slots
/// (`qattn.static_slots`, which its `static-slots=auto` follows): where K and
/// V both have stage 2, every head's K codes of a key are under 16 bytes a
/// lane (d x bits < 512; V's are half that), so that both tiles go through
/// the ring as code rows, whose every read the slot's offset enters, and
/// the rows are one 8-row block. H200, one call, two rounds each, against
/// the dynamic slots (bench/results/decode_gate_line_slots.json): d64 4-bit
/// 2-5% faster at every gate shape (B8 N32K 79.9 -> 76.4 us), d128 2-bit
/// 1.5%; where K goes as lane pieces (d128 4-bit) up to 4% slower, mixed 2/4
/// bits 17%, Nq 4 causal (two row blocks) 6%.
static bool chooseStaticSlots(AttentionOp op) {
  Stage2Attr ks = op.getKStage2Attr(), vs = op.getVStage2Attr();
  if (!ks || !vs)
    return false;
  if (rowBlocksOf(op) != 1)
    return false;
  for (int64_t h = 0, e = op.getNumKVHeads(); h < e; ++h)
    if (op.getHeadDim() * ks.getBitsOfHead(h) >= 512)
      return false;
  return true;
}

/// The K or V operands of the op, by role.
struct KVSources {
  SmallVector<Value> cache; // codes, scales, group scales, zeros | data, scales
  Value buffer, bufferScale;
  Stage1Attr stage1;
  Stage2Attr stage2;
};

class DecodeTiler {
public:
  DecodeTiler(AttentionOp op, const DecodeSplits &rule,
              const TileProgramShape &shape)
      : op(op), b(op.getLoc(), op), rule(rule),
        tileKeys(shape.tileKeys ? shape.tileKeys : chooseTileKeys(op)),
        lazyMax(shape.lazyMax < 0 ? chooseLazyMax(op) : shape.lazyMax),
        headsFastest(shape.headsFastest), balanceSplits(shape.balanceSplits),
        staticSlots(chooseStaticSlots(op)),
        warpsPerSM(shape.warpsPerSM
                       ? shape.warpsPerSM
                       : tileGridWarpsPerSM(rule.chip, tileKeys,
                                            rowBlocksOf(op), op.getHeadDim(),
                                            hasGroupsPerLane(op))) {}

  Value materialize();

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value divU(Value x, Value y) { return arith::DivUIOp::create(b, x, y); }
  Value minU(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }
  Value maxU(Value x, Value y) { return arith::MaxUIOp::create(b, x, y); }
  Value splat(RankedTensorType type, double v) {
    return arith::ConstantOp::create(
        b,
        DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), v)));
  }

  int64_t group() { return op.getNumQueryHeads() / op.getNumKVHeads(); }
  int64_t rowTiles() {
    return llvm::divideCeilSigned(group() * op.getNumQueries(), kTileRows);
  }
  /// The keys the cache can hold per sequence, and the buffer's.
  Value capacityKeys();
  /// The split count from the batch `batch` (see the definition).
  Value shapeGenericSplits(Value batch);
  /// The tile loaded from `kv` at key `first` of the cache (or the buffer).
  SmallVector<Value> loadTile(const KVSources &kv, bool fromBuffer, Value bi,
                              Value hk, Value first, Value bound,
                              FragmentLayout layout);
  Value dequantize(const KVSources &kv, bool fromBuffer, ValueRange tile,
                   Value hk, FragmentLayout layout);
  /// What a key loop computes: the online softmax, or (SAS, defined
  /// against each row's final max) a first pass for the maxima and a second
  /// for the terms.
  enum class Pass { online, maxOnly, fixedMax };
  /// One key loop over [lo, hi) (cache keys, or buffer keys from
  /// `cacheEnd`); `state` is {max, sum, acc}, or {max} for maxOnly.
  SmallVector<Value> keyLoop(Pass pass, bool fromBuffer, Value lo, Value hi,
                             Value cacheEnd, Value length, Value bi, Value hk,
                             Value rt, Value queryTile, ValueRange state);

  AttentionOp op;
  ImplicitLocOpBuilder b;
  DecodeSplits rule;
  int64_t tileKeys;
  double lazyMax;
  bool headsFastest, balanceSplits, staticSlots;
  int64_t warpsPerSM;
  KVSources k, v;
};
} // namespace

Value DecodeTiler::capacityKeys() {
  // A paged cache holds max_pages pages per sequence (the page table's
  // columns), a contiguous one its keys dimension.
  Value cache =
      op.getPageTable()
          ? b.createOrFold<arith::MulIOp>(
                b.createOrFold<tensor::DimOp>(op.getPageTable(), 1),
                idx(op.getNumCacheKeys()))
          : b.createOrFold<tensor::DimOp>(op.getK(), k.stage2 ? 1 : 2);
  int64_t bufferKeys = op.getNumBufferKeys();
  return bufferKeys ? b.createOrFold<arith::AddIOp>(cache, idx(bufferKeys))
                    : cache;
}

/// The key splits of a shape-generic grid, computed where the grid is (in
/// the host function, at run time where the batch or the capacity is
/// dynamic; folded to a constant where both are static):
///
///   S = max(1, min(slots / (B * Hkv * RT), ceil(capacity / minKeys),
///                  max(64, ceil(capacity / 256))))
///
/// One grid point is one warp, and `slots` the warps the grid kernel keeps
/// resident on the machine (sms * warpsPerSM: 132 x 12 = 1584 on the H200
/// at 168 registers): the most splits that still run in one wave. A
/// second, partial wave costs more than the parallelism it adds: on the H200
/// at B8 Hq32 Hkv8 d128 32K keys, 4-bit, S = 24 (1536 warps, 0.97 waves)
/// took 142 us, S = 33 (1.33 waves) 161 us, S = 48 (1.94 waves) 170 us.
/// No more splits than the capacity (the keys a sequence can hold: a paged
/// cache's max_pages * page size, or a contiguous cache's keys dimension,
/// plus the buffer's) fills with `minKeysPerSplit` keys each, and at most 64
/// (kMaxSplits) unless each split still gets 256 keys (kLongSplitKeys): a
/// short split's partial rows cost about what it saves. H200, B1 Hq32 Hkv8
/// 4-bit g16, 32741 keys and a 37-token tail, one call (decode_gate.py):
/// 65 splits (512 keys each at least) d128 35.1 us, d64 28.6; 129 (256)
/// 32.1 and 27.2. At 128K keys the wave bounds it (198; 64 splits had taken
/// 113.4 us, 256 104.7). A split past a sequence's actual length exits
/// at once. A batch too large for one wave at one split per sequence takes
/// one.
Value DecodeTiler::shapeGenericSplits(Value batch) {
  int64_t slots = rule.sms * warpsPerSM;
  Value tasks = b.createOrFold<arith::MulIOp>(
      batch, idx(op.getNumKVHeads() * rowTiles()));
  Value wave = b.createOrFold<arith::DivUIOp>(idx(slots), tasks);
  Value capacity = capacityKeys();
  Value longest = b.createOrFold<arith::CeilDivUIOp>(capacity,
                                                     idx(rule.minKeysPerSplit));
  Value many = b.createOrFold<arith::MaxUIOp>(
      b.createOrFold<arith::CeilDivUIOp>(capacity, idx(kLongSplitKeys)),
      idx(kMaxSplits));
  Value most = b.createOrFold<arith::MinUIOp>(longest, many);
  return b.createOrFold<arith::MaxUIOp>(
      b.createOrFold<arith::MinUIOp>(wave, most), idx(1));
}

SmallVector<Value> DecodeTiler::loadTile(const KVSources &kv, bool fromBuffer,
                                         Value bi, Value hk, Value first,
                                         Value bound, FragmentLayout layout) {
  int64_t d = op.getHeadDim();
  SmallVector<Value> sources =
      fromBuffer ? SmallVector<Value>{kv.buffer, kv.bufferScale} : kv.cache;
  Stage1Attr s1 = fromBuffer ? Stage1Attr() : kv.stage1;
  Stage2Attr s2 = fromBuffer ? Stage2Attr() : kv.stage2;
  Type i8 = b.getI8Type(), f32 = b.getF32Type();
  SmallVector<int64_t> s1Shape = {tileKeys};
  if (s1 && s1.getGranularity() == Granularity::channel)
    s1Shape.push_back(d);
  SmallVector<Type> types;
  if (s2) {
    int64_t widest = 0;
    for (int64_t h = 0, e = op.getNumKVHeads(); h < e; ++h)
      widest = std::max(widest, d * s2.getBitsOfHead(h) / 8);
    int64_t groups = std::max<int64_t>(1, tileKeys / s2.getGroup());
    types = {RankedTensorType::get({tileKeys, widest}, i8),
             RankedTensorType::get({groups, d}, i8),
             RankedTensorType::get({groups, d}, i8)};
  } else {
    types = {RankedTensorType::get({tileKeys, d}, i8)};
  }
  types.push_back(RankedTensorType::get(s1Shape, f32));
  Value table = fromBuffer ? Value() : op.getPageTable();
  auto load =
      LoadKVTileOp::create(b, types, sources, table, bi, hk, first, bound,
                           b.getI64IntegerAttr(tileKeys), s1, s2,
                           FragmentLayoutAttr::get(b.getContext(), layout));
  return SmallVector<Value>(load.getResults());
}

Value DecodeTiler::dequantize(const KVSources &kv, bool fromBuffer,
                              ValueRange tile, Value hk,
                              FragmentLayout layout) {
  Stage2Attr s2 = fromBuffer ? Stage2Attr() : kv.stage2;
  bool mixed = s2 && s2.getBits().size() > 1;
  auto type =
      RankedTensorType::get({tileKeys, op.getHeadDim()}, b.getF32Type());
  return DequantizeTileOp::create(
      b, type, tile, mixed ? hk : Value(), s2,
      FragmentLayoutAttr::get(b.getContext(), layout));
}

SmallVector<Value> DecodeTiler::keyLoop(Pass pass, bool fromBuffer, Value lo,
                                        Value hi, Value cacheEnd, Value length,
                                        Value bi, Value hk, Value rt,
                                        Value queryTile, ValueRange state) {
  auto loop = scf::ForOp::create(b, lo, hi, idx(tileKeys), state);
  // qattn-pipeline software-pipelines the loops that carry this mark, but
  // for the decode buffer's: it takes at most a page's tiles (2 steps of 32
  // keys), loaded into registers, and one tile in flight ahead there held a
  // second tile's registers through the whole kernel (at d = 128 int8, 64 a
  // lane: 165 live at its peak against the cache loop's 129, which sized
  // the kernel's registers). A depth already written is one it keeps.
  loop->setAttr(kKeyLoopAttr, b.getUnitAttr());
  if (fromBuffer)
    loop->setAttr(kPipelineStagesAttr, b.getI64IntegerAttr(1));
  else if (staticSlots)
    loop->setAttr(kStaticSlotsAttr, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  // Buffer rows count from the cache's end.
  Value first = fromBuffer ? sub(j, cacheEnd) : j;
  Value bound = fromBuffer ? sub(hi, cacheEnd) : hi;
  SmallVector<Value> kTile =
      loadTile(k, fromBuffer, bi, hk, first, bound, FragmentLayout::mma_keys_a);
  SmallVector<Value> vTile;
  if (pass != Pass::maxOnly)
    vTile = loadTile(v, fromBuffer, bi, hk, first, bound,
                     FragmentLayout::mma_values_a);
  Value keys = dequantize(k, fromBuffer, kTile, hk, FragmentLayout::mma_keys_a);
  auto scoresType =
      RankedTensorType::get({kTileRows, tileKeys}, b.getF32Type());
  Value scores = TileScoresOp::create(
      b, scoresType, queryTile, keys, rt, j, hi, length,
      b.getF32FloatAttr(op.getSoftmaxScale()), b.getI64IntegerAttr(group()),
      b.getI64IntegerAttr(op.getNumQueries()),
      op.getCausal() ? b.getUnitAttr() : UnitAttr());
  ValueRange args = loop.getRegionIterArgs();
  if (pass == Pass::maxOnly) {
    Value max = TileRowMaxOp::create(b, args[0].getType(), scores, args[0]);
    scf::YieldOp::create(b, max);
    return SmallVector<Value>(loop.getResults());
  }
  Value values =
      dequantize(v, fromBuffer, vTile, hk, FragmentLayout::mma_values_a);
  bool fixed = pass == Pass::fixedMax;
  auto update = SoftmaxUpdateOp::create(
      b, args[0].getType(), args[1].getType(), args[2].getType(), scores,
      values, args[0], args[1], args[2], fixed ? b.getUnitAttr() : UnitAttr(),
      fixed ? op.getSoftmaxOrDefault() : SoftmaxAttr(),
      fixed || lazyMax == 0.0 ? FloatAttr() : b.getF32FloatAttr(lazyMax));
  scf::YieldOp::create(b, update.getResults());
  return SmallVector<Value>(loop.getResults());
}

Value DecodeTiler::materialize() {
  k = {{op.getK(), op.getKScales()},
       op.getKBuffer(),
       op.getKBufferScale(),
       op.getKStage1(),
       op.getKStage2Attr()};
  v = {{op.getV(), op.getVScales()},
       op.getVBuffer(),
       op.getVBufferScale(),
       op.getVStage1(),
       op.getVStage2Attr()};
  if (k.stage2)
    k.cache.append({op.getKGroupScales(), op.getKZeros()});
  if (v.stage2)
    v.cache.append({op.getVGroupScales(), op.getVZeros()});
  // SAS terms are defined against each row's final max over all its keys:
  // one split, two passes.
  bool sas = op.getSoftmaxOrDefault().getMode() != SoftmaxMode::exact;
  int64_t hkv = op.getNumKVHeads(), d = op.getHeadDim(), rts = rowTiles();
  int64_t bufferKeys = op.getNumBufferKeys();
  Type f32 = b.getF32Type();
  Value batch = b.createOrFold<tensor::DimOp>(op.getQ(), 0);
  // The split count: a constant, or an index the host computes.
  Value splits =
      sas || rule.fixed ? idx(sas ? 1 : rule.fixed) : shapeGenericSplits(batch);
  // Balanced chunks: at most B x S of them, one a grid point.
  bool balanced = balanceSplits && op.getKvLens() && !sas;
  std::optional<int64_t> staticSplits = getConstantIntValue(splits);
  std::optional<int64_t> staticBatch = getConstantIntValue(batch);
  int64_t dyn = ShapedType::kDynamic;
  int64_t batchDim = staticBatch.value_or(dyn);
  int64_t splitDim = staticSplits.value_or(dyn);
  auto accType =
      RankedTensorType::get({batchDim, hkv, rts, splitDim, kTileRows, d}, f32);
  auto rowType =
      RankedTensorType::get({batchDim, hkv, rts, splitDim, kTileRows}, f32);
  SmallVector<Value> dynamicSizes;
  if (!staticBatch)
    dynamicSizes.push_back(batch);
  if (!staticSplits)
    dynamicSizes.push_back(splits);
  // Per grid point and row: the running max, sum and accumulators.
  SmallVector<Value> outs = {
      tensor::EmptyOp::create(b, rowType.getShape(), f32, dynamicSizes),
      tensor::EmptyOp::create(b, rowType.getShape(), f32, dynamicSizes),
      tensor::EmptyOp::create(b, accType.getShape(), f32, dynamicSizes)};
  // One program per (batch, KV head, row tile, key split): a CTA of the
  // grid on the GPU.
  SmallVector<OpFoldResult> ubs = {getAsOpFoldResult(batch),
                                   b.getIndexAttr(hkv), b.getIndexAttr(rts),
                                   getAsOpFoldResult(splits)};
  MLIRContext *ctx = b.getContext();
  auto dim = [&](gpu::MappingId id) {
    return gpu::GPUBlockMappingAttr::get(ctx, id);
  };
  using gpu::MappingId;
  ArrayAttr mapping =
      headsFastest
          ? b.getArrayAttr(
                {dim(MappingId::LinearDim3), dim(MappingId::LinearDim0),
                 dim(MappingId::LinearDim2), dim(MappingId::LinearDim1)})
          : b.getArrayAttr(
                {dim(MappingId::LinearDim3), dim(MappingId::LinearDim2),
                 dim(MappingId::LinearDim1), dim(MappingId::LinearDim0)});
  auto grid = scf::ForallOp::create(b, ubs, outs, mapping);
  grid->setAttr(kGridWarpsPerSMAttr, b.getI64IntegerAttr(warpsPerSM));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(grid.getBody());
    SmallVector<Value> ivs = grid.getInductionVars();
    Value bi = ivs[0], hk = ivs[1], rt = ivs[2], s = ivs[3];
    // With balanced chunks, grid point (bi, s) is slot bi S + s of B S
    // chunks, which qattn.key_chunk gives a sequence and its keys.
    Value count = staticSplits ? idx(*staticSplits) : splits;
    Value seq = bi, chunkLo, chunkHi;
    if (balanced) {
      Value lens = op.getKvLens();
      Value chunks = mul(b.createOrFold<tensor::DimOp>(lens, 0), count);
      Type index = b.getIndexType();
      auto chunk = KeyChunkOp::create(b, index, index, index, lens,
                                      add(mul(bi, count), s), chunks,
                                      b.getI64IntegerAttr(tileKeys));
      seq = chunk.getSeq();
      chunkLo = chunk.getLo();
      chunkHi = chunk.getHi();
    }
    // The sequence's keys: kv_lens[b], else the whole cache and buffer; the
    // last L mod Nb of them in the buffer.
    Value length, cacheEnd;
    if (Value lens = op.getKvLens()) {
      Value len = tensor::ExtractOp::create(b, lens, ValueRange{seq});
      length = arith::IndexCastOp::create(b, b.getIndexType(), len);
      cacheEnd =
          bufferKeys
              ? sub(length, arith::RemUIOp::create(b, length, idx(bufferKeys)))
              : length;
    } else {
      // Without lengths every sequence holds the whole cache (and buffer);
      // read in the grid, whose kernel takes the cache and its sizes.
      cacheEnd = b.createOrFold<tensor::DimOp>(op.getK(), k.stage2 ? 1 : 2);
      length = add(cacheEnd, idx(bufferKeys));
    }
    // This split's keys: whole tiles of the sequence, in `splits` slices
    // (or the balanced chunk's).
    Value lo = chunkLo, hi = chunkHi;
    if (!balanced) {
      Value perSplit = divU(add(length, staticSplits ? idx(*staticSplits - 1)
                                                     : sub(count, idx(1))),
                            count);
      perSplit = mul(divU(add(perSplit, idx(tileKeys - 1)), idx(tileKeys)),
                     idx(tileKeys));
      lo = minU(mul(s, perSplit), length);
      hi = minU(add(lo, perSplit), length);
    }

    auto qType = RankedTensorType::get({kTileRows, d}, f32);
    Value queryTile = LoadQueryTileOp::create(
        b, qType, op.getQ(), op.getQScales(), seq, hk, rt,
        b.getI64IntegerAttr(group()), op.getQStage1Attr(),
        FragmentLayoutAttr::get(ctx, FragmentLayout::mma_queries_b));
    auto rows = RankedTensorType::get({kTileRows}, f32);
    SmallVector<Value> state = {
        splat(rows, -INFINITY), splat(rows, 0.0),
        splat(RankedTensorType::get({kTileRows, d}, f32), 0.0)};
    Value cacheHi = minU(hi, cacheEnd);
    // The cache's keys, then the buffer's.
    auto allKeys = [&](Pass pass, ValueRange init) {
      SmallVector<Value> out =
          keyLoop(pass, /*fromBuffer=*/false, minU(lo, cacheHi), cacheHi,
                  cacheEnd, length, seq, hk, rt, queryTile, init);
      if (bufferKeys)
        out = keyLoop(pass, /*fromBuffer=*/true, maxU(lo, cacheEnd),
                      maxU(hi, cacheEnd), cacheEnd, length, seq, hk, rt,
                      queryTile, out);
      return out;
    };
    if (sas) {
      state[0] = allKeys(Pass::maxOnly, state[0]).front();
      state = allKeys(Pass::fixedMax, state);
    } else {
      state = allKeys(Pass::online, state);
    }

    // The partial rows of this grid point.
    b.setInsertionPointToStart(grid.getTerminator().getBody());
    auto unit = [&](ArrayRef<int64_t> tail) {
      SmallVector<OpFoldResult> sizes(4, b.getIndexAttr(1));
      for (int64_t t : tail)
        sizes.push_back(b.getIndexAttr(t));
      return sizes;
    };
    auto outArgs = grid.getRegionIterArgs();
    SmallVector<SmallVector<int64_t>> tails = {
        {kTileRows}, {kTileRows}, {kTileRows, d}};
    for (auto [value, dest, tail] : llvm::zip(state, outArgs, tails)) {
      SmallVector<OpFoldResult> offsets = {bi, hk, rt, s};
      offsets.append(tail.size(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
      tensor::ParallelInsertSliceOp::create(b, value, dest, offsets, unit(tail),
                                            strides);
    }
  }
  return CombineSplitsOp::create(
      b, op.getResult().getType(), grid.getResult(2), grid.getResult(0),
      grid.getResult(1), balanced ? op.getKvLens() : Value(),
      b.getI64IntegerAttr(group()),
      balanced ? b.getI64IntegerAttr(tileKeys) : IntegerAttr());
}

std::string mlir::qattn::whyNotDecodeTiles(AttentionOp op) {
  for (Stage2Attr s2 : {op.getKStage2Attr(), op.getVStage2Attr()})
    if (s2 && s2.getGroup() % kTileKeys != 0 && kTileKeys % s2.getGroup() != 0)
      return "expected stage-2 groups that divide or are multiples of " +
             std::to_string(kTileKeys) + " keys";
  if (op.getPageTable() && op.getNumCacheKeys() % kTileKeys != 0)
    return "expected a page size that is a multiple of " +
           std::to_string(kTileKeys) + " keys";
  return "";
}

std::string mlir::qattn::whyNotGpuDecodeTiles(AttentionOp op) {
  if (std::string why = whyNotDecodeTiles(op); !why.empty())
    return "cannot express it yet: " + why;
  if (op.getNumQueries() > kMaxDecodeQueries)
    return "takes at most " + std::to_string(kMaxDecodeQueries) +
           " queries a sequence (more are prefill)";
  int64_t d = op.getHeadDim();
  if (std::string why = whyNoTileGpuHeadDim(d); !why.empty())
    return "has no GPU lowering yet for " + why;
  for (auto [s1, s2] : {std::pair(op.getKStage1Attr(), op.getKStage2Attr()),
                        std::pair(op.getVStage1Attr(), op.getVStage2Attr())}) {
    std::string why =
        s1 ? whyNoTileGpuBlocks(s1.getBlock(),
                                s1.getGranularity() == Granularity::channel)
           : "";
    if (why.empty() && s2)
      why = whyNoTileGpuCodes(d, s2.getBits());
    if (why.empty() && s2)
      why = whyNoTileGpuGroups(s2.getGroup());
    if (!why.empty())
      return "has no GPU lowering yet for " + why;
  }
  return "";
}

void mlir::qattn::tileDecodeAttention(AttentionOp op,
                                      const DecodeSplits &splits,
                                      const TileProgramShape &shape) {
  Value out = DecodeTiler(op, splits, shape).materialize();
  op.getResult().replaceAllUsesWith(out);
  op.erase();
}
