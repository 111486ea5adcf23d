//===- RowsKernel.cpp - qattn.attention as a warp kernel on CUDA cores ----===//
//
// Part of the qattn project.
//
// The warp kernel runs on CUDA cores: one warp per query and KV head, serving
// every query head of the group; lane l holds channels [l * d/32,
// (l+1) * d/32) of the queries, the output accumulators and each key/value row
// it dequantizes (once for the group); a butterfly shuffle sums each score.
// Keys stream with an online softmax (SAS: two passes); several key splits
// per row (flash-decoding) write partial rows that a combine kernel merges.
// The fallback for the static shapes and formats the tensor-core kernels
// do not take.
//
//===----------------------------------------------------------------------===//

#include "KernelCommon.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::format;
using namespace mlir::qattn::kernels;

//===----------------------------------------------------------------------===//
// The attention kernel
//===----------------------------------------------------------------------===//

namespace {
/// Online-softmax state of one warp's row: running max, sum, accumulators.
struct RowState {
  Value max, sum;
  SmallVector<Value> acc;
  SmallVector<Value> flat() const {
    SmallVector<Value> v = {max, sum};
    v.append(acc.begin(), acc.end());
    return v;
  }
  static RowState unflat(ValueRange v) {
    return {v[0], v[1], SmallVector<Value>(v.drop_front(2))};
  }
};

/// The states of the query heads one warp serves, flattened for loops.
static SmallVector<Value> flatten(ArrayRef<RowState> states) {
  SmallVector<Value> flat;
  for (const RowState &st : states)
    llvm::append_range(flat, st.flat());
  return flat;
}
static SmallVector<RowState> unflatten(ValueRange flat, int64_t heads) {
  int64_t each = flat.size() / heads;
  SmallVector<RowState> states;
  for (int64_t g = 0; g < heads; ++g)
    states.push_back(RowState::unflat(flat.slice(g * each, each)));
  return states;
}

/// The dequantized values of key/value row j at the lane's channels.
using LoadRowFn = function_ref<SmallVector<Value>(Value j)>;

class AttentionKernelEmitter {
public:
  AttentionKernelEmitter(ImplicitLocOpBuilder &b, const AttentionShape &shape,
                         const AttentionView &view, Type outType,
                         SoftmaxAttr softmax)
      : b(b), shape(shape), view(view), outType(outType), softmax(softmax) {}

  /// Body of the main kernel; `outputs` is {out} or {partialAcc, partialMaxSum}.
  void emitMain(ValueRange outputs) {
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value lane = rem(b, tid, kThreadsPerWarp);
    Value task = add(b, mul(b, gpu::BlockIdOp::create(b, gpu::Dimension::y),
                            shape.warps),
                     div(b, tid, kThreadsPerWarp));
    Value split = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, task,
                                          indexConst(b, shape.warpTasks()));
    auto ifOp = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());

    // A warp serves query i of every query head that reads KV head hk, so
    // each key and value is loaded and dequantized once for the group.
    RowIndex idx;
    idx.i = rem(b, task, shape.queries);
    Value bk = div(b, task, shape.queries);
    idx.hk = rem(b, bk, shape.kvHeads);
    idx.bi = div(b, bk, shape.kvHeads);
    idx.split = split;
    idx.lane = lane;
    for (int64_t g = 0; g < shape.groupSize(); ++g) {
      Value h = add(b, mul(b, idx.hk, shape.groupSize()), indexConst(b, g));
      idx.heads.push_back(h);
      idx.rows.push_back(add(
          b, mul(b, add(b, mul(b, idx.bi, shape.qHeads), h), shape.queries),
          idx.i));
    }
    for (int64_t t = 0; t < shape.channelsPerLane(); ++t)
      idx.channels.push_back(channel(lane, t));

    // Mixed per-head bit widths: specialize the row per KV head, so every
    // head's code width and byte offset are constants (the branch is
    // warp-uniform).
    if (!isMixed(view.k.stage2) && !isMixed(view.v.stage2))
      return emitRow(idx, std::nullopt, outputs);
    SmallVector<int64_t> cases = llvm::to_vector(llvm::seq<int64_t>(0, shape.kvHeads));
    auto sw = scf::IndexSwitchOp::create(b, TypeRange{}, idx.hk, cases,
                                         cases.size());
    for (int64_t head : cases) {
      b.setInsertionPointToStart(&sw.getCaseRegions()[head].emplaceBlock());
      emitRow(idx, head, outputs);
      scf::YieldOp::create(b);
    }
    b.setInsertionPointToStart(&sw.getDefaultRegion().emplaceBlock());
    scf::YieldOp::create(b);
  }

  /// Body of the combine kernel merging `splits` partial rows: a CTA of
  /// combineWarps() warps per row, warp w merging its share of the splits
  /// (lane l: channels l, l + 32, ...), then each thread one channel over
  /// the warps' results through workgroup memory. One warp per row left the
  /// splits to a chain of dependent load rounds: at B1 N32K d128 (64
  /// splits, 8 CTAs) it took 18.5 us next to the main kernel's 33.8 (ncu).
  void emitCombine(gpu::GPUFuncOp kernel, Value partialAcc, Value partialMaxSum,
                   Value out) {
    int64_t d = shape.headDim, perLane = shape.channelsPerLane();
    int64_t warps = shape.combineWarps(), threads = warps * kThreadsPerWarp;
    int64_t share = llvm::divideCeilSigned(shape.splits, warps);
    // Per warp: its max, sum and d accumulators.
    int64_t stride = 2 + d;
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    Value merged = kernel.addWorkgroupAttribution(
        MemRefType::get({warps * stride}, b.getF32Type(), nullptr, wg),
        b.getLoc());
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value lane = rem(b, tid, kThreadsPerWarp);
    Value warp = div(b, tid, kThreadsPerWarp);
    Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value zero = indexConst(b, 0), one = indexConst(b, 1);
    // Lane l: channels l, l + 32, ... (each load coalesced over the warp).
    auto chan = [&](int64_t t) {
      return add(b, lane, indexConst(b, t * kThreadsPerWarp));
    };

    // Warp w: splits w * share + u, u < share, in chunks whose loads are
    // all issued before any is used (one load round per chunk, not per
    // split); a chunk holds its loads in at most 96 registers (ptxas gives
    // this kernel 64 and spilled at 17 splits of d = 128). Past the last
    // split a slot reads the last one with max -inf (weight 0). One pass,
    // online: the running max, sum and accumulators are rescaled once per
    // chunk (a slice that saw no key has max -inf and sum 0).
    int64_t chunk = std::min<int64_t>(share, std::max<int64_t>(1, 96 / (2 + perLane)));
    Value first = mul(b, warp, share);
    auto mergeChunk = [&](Value u0, int64_t n, ValueRange acc) {
      SmallVector<Value> ms, ls;
      SmallVector<SmallVector<Value>> as;
      for (int64_t u = 0; u < n; ++u) {
        Value s = add(b, first, add(b, u0, indexConst(b, u)));
        Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, s,
                                            indexConst(b, shape.splits));
        s = minIdx(b, s, indexConst(b, shape.splits - 1));
        ms.push_back(arith::SelectOp::create(
            b, valid, load(b, partialMaxSum, {row, s, zero}),
            f32Const(b, -INFINITY)));
        ls.push_back(load(b, partialMaxSum, {row, s, one}));
        SmallVector<Value> &a = as.emplace_back();
        for (int64_t t = 0; t < perLane; ++t)
          a.push_back(load(b, partialAcc, {row, s, chan(t)}));
      }
      Value m = acc[0];
      for (Value x : ms)
        m = arith::MaximumFOp::create(b, m, x);
      Value ref = finiteRef(b, m);
      auto weight = [&](Value x) {
        return math::ExpOp::create(b, arith::SubFOp::create(b, x, ref));
      };
      Value old = weight(acc[0]);
      SmallVector<Value> next = {m};
      for (Value a : acc.drop_front())
        next.push_back(arith::MulFOp::create(b, a, old));
      for (auto [mx, l, a] : llvm::zip(ms, ls, as)) {
        Value w = weight(mx);
        next[1] = arith::AddFOp::create(b, next[1], arith::MulFOp::create(b, w, l));
        for (int64_t t = 0; t < perLane; ++t)
          next[2 + t] = arith::AddFOp::create(
              b, next[2 + t], arith::MulFOp::create(b, w, a[t]));
      }
      return next;
    };
    SmallVector<Value> init = {f32Const(b, -INFINITY), f32Const(b, 0.0)};
    init.append(perLane, f32Const(b, 0.0));
    int64_t chunks = share / chunk, rest = share % chunk;
    SmallVector<Value> acc = reduceRange(
        b, zero, indexConst(b, chunks), init, [&](Value c, ValueRange a) {
          return mergeChunk(mul(b, c, chunk), chunk, a);
        });
    if (rest)
      acc = mergeChunk(indexConst(b, chunks * chunk), rest, acc);

    // The warps' (max, sum, accumulators) into workgroup memory.
    Value base = mul(b, warp, stride);
    {
      Value lead = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, zero);
      auto ifOp = scf::IfOp::create(b, lead, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      memref::StoreOp::create(b, acc[0], merged, ValueRange{base});
      memref::StoreOp::create(b, acc[1], merged, ValueRange{add(b, base, one)});
    }
    for (int64_t t = 0; t < perLane; ++t)
      memref::StoreOp::create(b, acc[2 + t], merged,
                              ValueRange{add(b, base, add(b, chan(t), indexConst(b, 2)))});
    gpu::BarrierOp::create(b);

    // Each channel c over the warps, by thread c mod `threads`.
    Value i = rem(b, row, shape.queries);
    Value bh = div(b, row, shape.queries);
    Value h = rem(b, bh, shape.qHeads);
    Value bi = div(b, bh, shape.qHeads);
    SmallVector<Value> ms, ls;
    for (int64_t w = 0; w < warps; ++w) {
      Value at = indexConst(b, w * stride);
      ms.push_back(memref::LoadOp::create(b, merged, ValueRange{at}));
      ls.push_back(memref::LoadOp::create(b, merged, ValueRange{add(b, at, one)}));
    }
    Value m = ms[0];
    for (Value x : ArrayRef<Value>(ms).drop_front())
      m = arith::MaximumFOp::create(b, m, x);
    Value ref = finiteRef(b, m);
    SmallVector<Value> weights;
    Value sum = f32Const(b, 0.0);
    for (int64_t w = 0; w < warps; ++w) {
      weights.push_back(math::ExpOp::create(b, arith::SubFOp::create(b, ms[w], ref)));
      sum = arith::AddFOp::create(b, sum, arith::MulFOp::create(b, weights[w], ls[w]));
    }
    spreadOver(b, tid, threads, d, [&](Value c) {
      Value o = f32Const(b, 0.0);
      for (int64_t w = 0; w < warps; ++w) {
        Value x = memref::LoadOp::create(
            b, merged, ValueRange{add(b, c, indexConst(b, w * stride + 2))});
        o = arith::AddFOp::create(b, o, arith::MulFOp::create(b, weights[w], x));
      }
      store(b, fromF32(b, arith::DivFOp::create(b, o, sum), outType), out,
            {bi, h, i, c});
    });
  }

private:
  struct RowIndex {
    Value bi, hk, i, split, lane;
    SmallVector<Value> heads, rows; // per query head of the group
    SmallVector<Value> channels;
  };

  static bool isMixed(Stage2Attr s) { return s && s.getBits().size() > 1; }

  Value channel(Value lane, int64_t t) {
    return add(b, mul(b, lane, shape.channelsPerLane()), indexConst(b, t));
  }

  /// One online-softmax step over `count` keys from `first`: all their key
  /// and value loads are issued before any score is reduced, so a warp has
  /// `count` rows of loads in flight instead of one.
  using Rows = SmallVector<SmallVector<Value>>;

  /// Key and value rows first .. first + count - 1; with `lastKey`, indices
  /// are clamped to it so a prefetch past the range stays in bounds.
  std::pair<Rows, Rows> loadRows(Value first, int64_t count, LoadRowFn loadK,
                                 LoadRowFn loadV, Value lastKey = Value()) {
    Rows k(count), v(count);
    for (int64_t u = 0; u < count; ++u) {
      Value j = add(b, first, indexConst(b, u));
      if (lastKey)
        j = minIdx(b, j, lastKey);
      k[u] = loadK(j);
      v[u] = loadV(j);
    }
    return {k, v};
  }

  SmallVector<RowState> updateAll(ArrayRef<RowState> states,
                                  ArrayRef<SmallVector<Value>> q,
                                  const Rows &k, const Rows &v) {
    SmallVector<RowState> next;
    for (auto [st, qh] : llvm::zip(states, q))
      next.push_back(update(st, qh, k, v));
    return next;
  }

  SmallVector<RowState> step(Value first, int64_t count,
                             ArrayRef<RowState> states,
                             ArrayRef<SmallVector<Value>> q,
                             LoadRowFn loadK, LoadRowFn loadV) {
    auto [k, v] = loadRows(first, count, loadK, loadV);
    return updateAll(states, q, k, v);
  }

  static SmallVector<Value> flattenRows(const Rows &rows) {
    SmallVector<Value> flat;
    for (const SmallVector<Value> &r : rows)
      llvm::append_range(flat, r);
    return flat;
  }
  static Rows unflattenRows(ValueRange flat, int64_t count) {
    Rows rows;
    int64_t each = count ? flat.size() / count : 0;
    for (int64_t u = 0; u < count; ++u)
      rows.push_back(SmallVector<Value>(flat.slice(u * each, each)));
    return rows;
  }

  /// Whole steps with the next step's rows loaded before this step's scores
  /// are reduced (two stages, software pipelined through the loop's
  /// iteration arguments): a warp keeps two steps of loads in flight.
  SmallVector<RowState> pipelinedSteps(Value lo, Value hi, Value steps,
                                       ArrayRef<RowState> init,
                                       ArrayRef<SmallVector<Value>> q,
                                       LoadRowFn loadK, LoadRowFn loadV) {
    int64_t perStep = shape.keysPerStep, heads = init.size();
    // The last valid row (ranges are never past their table; an empty one
    // still reads row 0, which exists, and discards it).
    Value lastKey = arith::SubIOp::create(
        b, maxIdx(b, hi, indexConst(b, 1)), indexConst(b, 1));
    auto [k0, v0] = loadRows(lo, perStep, loadK, loadV, lastKey);
    SmallVector<Value> stateFlat = flatten(init);
    SmallVector<Value> kFlat = flattenRows(k0), vFlat = flattenRows(v0);
    size_t ns = stateFlat.size(), nk = kFlat.size();
    SmallVector<Value> initFlat(stateFlat);
    llvm::append_range(initFlat, kFlat);
    llvm::append_range(initFlat, vFlat);
    SmallVector<Value> out = reduceRange(
        b, indexConst(b, 0), steps, initFlat, [&](Value it, ValueRange flat) {
          Value nextFirst = add(b, lo, mul(b, add(b, it, indexConst(b, 1)),
                                           perStep));
          auto [kn, vn] = loadRows(nextFirst, perStep, loadK, loadV, lastKey);
          SmallVector<RowState> states = updateAll(
              unflatten(flat.take_front(ns), heads), q,
              unflattenRows(flat.slice(ns, nk), perStep),
              unflattenRows(flat.drop_front(ns + nk), perStep));
          SmallVector<Value> next = flatten(states);
          llvm::append_range(next, flattenRows(kn));
          llvm::append_range(next, flattenRows(vn));
          return next;
        });
    return unflatten(ValueRange(out).take_front(ns), heads);
  }

  /// The online-softmax update of one query head with `k.size()` keys.
  RowState update(const RowState &st, ArrayRef<Value> q,
                  ArrayRef<SmallVector<Value>> k,
                  ArrayRef<SmallVector<Value>> v) {
    SmallVector<Value> scores;
    Value stepMax = st.max; // with FixedMax: the row's final max already
    for (ArrayRef<Value> ku : k) {
      Value part = f32Const(b, 0.0);
      for (auto [qt, kt] : llvm::zip(q, ku))
        part = arith::AddFOp::create(b, part, arith::MulFOp::create(b, qt, kt));
      scores.push_back(warpSum(b, part));
      if (pass != Pass::FixedMax)
        stepMax = arith::MaximumFOp::create(b, stepMax, scores.back());
    }
    if (pass == Pass::MaxOnly)
      return {stepMax, st.sum, st.acc};
    Value correction =
        pass == Pass::FixedMax
            ? f32Const(b, 1.0)
            : math::ExpOp::create(b, arith::SubFOp::create(b, st.max, stepMax));
    RowState next{stepMax, arith::MulFOp::create(b, st.sum, correction), {}};
    for (Value a : st.acc)
      next.acc.push_back(arith::MulFOp::create(b, a, correction));
    for (auto [score, vu] : llvm::zip(scores, v)) {
      Value p = softmaxTerm(b, arith::SubFOp::create(b, score, stepMax), softmax);
      next.sum = arith::AddFOp::create(b, next.sum, p);
      for (auto [a, vt] : llvm::zip(next.acc, vu))
        a = arith::AddFOp::create(b, a, arith::MulFOp::create(b, p, vt));
    }
    return next;
  }

  /// Streams keys [lo, hi) through the online softmax: whole steps of
  /// `keysPerStep` keys, then the remainder one key at a time.
  SmallVector<RowState> streamKeys(Value lo, Value hi,
                                   ArrayRef<RowState> init,
                                   ArrayRef<SmallVector<Value>> q,
                                   LoadRowFn loadK, LoadRowFn loadV) {
    int64_t perStep = shape.keysPerStep, heads = init.size();
    Value steps = div(b, arith::SubIOp::create(b, hi, lo), perStep);
    auto run = [&](Value from, Value count, int64_t keys,
                   ArrayRef<RowState> states) {
      return unflatten(
          reduceRange(b, indexConst(b, 0), count, flatten(states),
                      [&](Value it, ValueRange flat) {
                        Value first = add(b, from, mul(b, it, keys));
                        return flatten(step(first, keys,
                                            unflatten(flat, heads), q,
                                            loadK, loadV));
                      }),
          heads);
    };
    SmallVector<RowState> states =
        shape.stages > 1
            ? pipelinedSteps(lo, hi, steps, init, q, loadK, loadV)
            : run(lo, steps, perStep, init);
    if (perStep == 1)
      return states;
    Value tail = add(b, lo, mul(b, steps, perStep));
    return run(tail, arith::SubIOp::create(b, hi, tail), 1, states);
  }

  void emitRow(const RowIndex &x, std::optional<int64_t> head,
               ValueRange outputs) {
    // Each head's query row, pre-multiplied by the softmax scale.
    Value scale = f32Const(b, shape.scale);
    SmallVector<SmallVector<Value>> q;
    for (Value h : x.heads) {
      SmallVector<Value> &qh = q.emplace_back();
      for (Value c : x.channels) {
        Value v;
        if (view.qScales) {
          Value q8 = intToF32(b, load(b, view.q, {x.bi, h, x.i, c}));
          v = arith::MulFOp::create(
              b, q8,
              stage1ScaleAt(b, view.qScales, view.qStage1, x.bi, h, x.i, c));
        } else {
          v = toF32(b, load(b, view.q, {x.bi, h, x.i, c}));
        }
        qh.push_back(arith::MulFOp::create(b, v, scale));
      }
    }

    // This split's keys, cut at the causal diagonal.
    Value lo = mul(b, x.split, shape.keysPerSplit());
    Value hi = minIdx(b, add(b, lo, indexConst(b, shape.keysPerSplit())),
                      indexConst(b, shape.keys()));
    if (shape.causal)
      hi = minIdx(b, hi, add(b, x.i, indexConst(b, shape.keys() -
                                                         shape.queries + 1)));
    lo = minIdx(b, lo, hi);

    RowState empty{f32Const(b, -INFINITY), f32Const(b, 0.0),
                   SmallVector<Value>(x.channels.size(), f32Const(b, 0.0))};
    SmallVector<RowState> st(x.heads.size(), empty);
    auto [kBits, kOffset] =
        headCodes(b, view.k.stage2, x.hk, shape.headDim, head);
    auto [vBits, vOffset] =
        headCodes(b, view.v.stage2, x.hk, shape.headDim, head);
    Value cacheEnd = indexConst(b, shape.cacheKeys);
    auto noValues = [](Value) { return SmallVector<Value>(); };
    // The cache's keys, then the decode buffer's (key j is buffer row j - Nk).
    auto streamAll = [&](ArrayRef<RowState> init, bool withValues) {
      SmallVector<RowState> out = streamKeys(
          lo, minIdx(b, hi, cacheEnd), init, q,
          [&](Value j) { return cachedRow(view.k, x, j, kBits, kOffset); },
          [&](Value j) {
            return withValues ? cachedRow(view.v, x, j, vBits, vOffset)
                              : noValues(j);
          });
      if (!view.k.buffer)
        return out;
      Value bLo = arith::SubIOp::create(b, maxIdx(b, lo, cacheEnd), cacheEnd);
      Value bHi = arith::SubIOp::create(b, maxIdx(b, hi, cacheEnd), cacheEnd);
      return streamKeys(
          bLo, bHi, out, q, [&](Value j) { return bufferedRow(view.k, x, j); },
          [&](Value j) {
            return withValues ? bufferedRow(view.v, x, j) : noValues(j);
          });
    };
    if (softmax.getMode() == SoftmaxMode::exact) {
      st = streamAll(st, /*withValues=*/true);
    } else {
      // SAS is defined against the row's final max: one pass for the max,
      // one for the terms (docs/FORMAT.md).
      pass = Pass::MaxOnly;
      SmallVector<RowState> maxima = streamAll(st, /*withValues=*/false);
      for (auto [s0, m] : llvm::zip(st, maxima))
        s0.max = m.max;
      pass = Pass::FixedMax;
      st = streamAll(st, /*withValues=*/true);
      pass = Pass::Online;
    }
    for (int64_t g = 0, e = x.heads.size(); g < e; ++g)
      writeRow(x, g, st[g], outputs);
  }

  /// The lane's channels are contiguous, so a row's int8 data, group scales
  /// and zero points load as short vectors, and whole 2/4-bit codes sit at
  /// constant positions inside the loaded bytes.
  bool vectorizable(const KVView &kv, int64_t bits) const {
    if (!kv.stage2)
      return true;
    return 8 % bits == 0 && (shape.channelsPerLane() * bits) % 8 == 0;
  }

  /// A load of n elements that start at a multiple of n elements: the lane's
  /// first channel is lane * n, rows span multiples of 32 * n, and artifact
  /// buffers are 16-byte aligned (docs/ARTIFACT.md).
  Value loadVector(Value buffer, ValueRange idx, int64_t n, Type elt) {
    int64_t bytes = n * elt.getIntOrFloatBitWidth() / 8;
    return vector::LoadOp::create(b, VectorType::get({n}, elt), buffer, idx,
                                  /*nontemporal=*/false, llvm::Align(bytes));
  }
  Value element(Value vec, int64_t i) {
    return vector::ExtractOp::create(b, vec, ArrayRef<int64_t>{i});
  }

  SmallVector<Value> cachedRow(const KVView &kv, const RowIndex &x, Value j,
                               int64_t bits, Value headOffset) {
    SmallVector<Value> out;
    if (!vectorizable(kv, bits)) {
      for (Value c : x.channels)
        out.push_back(dequantizeCached(b, kv, x.bi, x.hk, j, c, bits, headOffset));
      return out;
    }
    int64_t per = shape.channelsPerLane();
    Value c0 = x.channels.front();
    Type i8 = b.getI8Type(), i32 = b.getI32Type();
    SmallVector<Value> q8;
    if (kv.stage2) {
      Value g = div(b, j, kv.stage2.getGroup());
      Value s2 = loadVector(kv.groupScales, {x.bi, x.hk, g, c0}, per, i8);
      Value z2 = loadVector(kv.zeros, {x.bi, x.hk, g, c0}, per, i8);
      Value firstByte = add(b, headOffset, mul(b, x.lane, per * bits / 8));
      Value codes = loadVector(kv.data, {x.bi, j, firstByte}, per * bits / 8, i8);
      for (int64_t t = 0; t < per; ++t) {
        int64_t shift = codeShift(t * bits, bits, kv.stage2.getOrder());
        Value byte = arith::ExtUIOp::create(b, i32, element(codes, t * bits / 8));
        Value code = arith::AndIOp::create(
            b, arith::ShRUIOp::create(b, byte, i32Const(b, shift)),
            i32Const(b, (1 << bits) - 1));
        q8.push_back(stage2Decode(
            b, code, arith::ExtUIOp::create(b, i32, element(s2, t)),
            arith::ExtSIOp::create(b, i32, element(z2, t)), kv.stage2.getAnchor()));
      }
    } else {
      Value data = loadVector(kv.data, {x.bi, x.hk, j, c0}, per, i8);
      for (int64_t t = 0; t < per; ++t)
        q8.push_back(arith::ExtSIOp::create(b, i32, element(data, t)));
    }
    bool perChannel = kv.stage1.getGranularity() == Granularity::channel;
    Value s1 = perChannel ? Value()
                          : stage1ScaleAt(b, kv.scales, kv.stage1, x.bi, x.hk, j, c0);
    for (auto [t, v] : llvm::enumerate(q8)) {
      Value s = perChannel ? stage1ScaleAt(b, kv.scales, kv.stage1, x.bi, x.hk,
                                           j, x.channels[t])
                           : s1;
      out.push_back(arith::MulFOp::create(b, intToF32(b, v), s));
    }
    return out;
  }

  SmallVector<Value> bufferedRow(const KVView &kv, const RowIndex &x, Value j) {
    int64_t per = shape.channelsPerLane();
    Value data = loadVector(kv.buffer, {x.bi, x.hk, j, x.channels.front()}, per,
                            b.getI8Type());
    Value s = load(b, kv.bufferScale, {x.bi, x.hk});
    SmallVector<Value> out;
    for (int64_t t = 0; t < per; ++t) {
      Value q8 = arith::ExtSIOp::create(b, b.getI32Type(), element(data, t));
      out.push_back(arith::MulFOp::create(b, intToF32(b, q8), s));
    }
    return out;
  }

  void writeRow(const RowIndex &x, int64_t g, const RowState &st,
                ValueRange outputs) {
    Value h = x.heads[g], row = x.rows[g];
    if (shape.splits == 1) {
      for (auto [a, c] : llvm::zip(st.acc, x.channels)) {
        Value o = arith::DivFOp::create(b, a, st.sum);
        store(b, fromF32(b, o, outType), outputs[0], {x.bi, h, x.i, c});
      }
      return;
    }
    for (auto [a, c] : llvm::zip(st.acc, x.channels))
      store(b, a, outputs[0], {row, x.split, c});
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x.lane,
                                        indexConst(b, 0));
    auto ifOp = scf::IfOp::create(b, first, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    store(b, st.max, outputs[1], {row, x.split, indexConst(b, 0)});
    store(b, st.sum, outputs[1], {row, x.split, indexConst(b, 1)});
  }

  /// How `update` treats the softmax: the online rescaling (exact), or the
  /// two passes of SAS (the max alone, then terms against that max).
  enum class Pass { Online, MaxOnly, FixedMax };

  ImplicitLocOpBuilder &b;
  const AttentionShape &shape;
  const AttentionView &view;
  Type outType;
  SoftmaxAttr softmax;
  Pass pass = Pass::Online;
};
} // namespace

void mlir::qattn::kernels::emitRowsAttention(ImplicitLocOpBuilder &b,
                                             const AttentionShape &shape,
                                             const AttentionView &view,
                                             Type outType, SoftmaxAttr softmax,
                                             ValueRange outputs) {
  AttentionKernelEmitter(b, shape, view, outType, softmax).emitMain(outputs);
}

void mlir::qattn::kernels::emitRowsCombine(ImplicitLocOpBuilder &b,
                                           const AttentionShape &shape,
                                           Type outType, SoftmaxAttr softmax,
                                           gpu::GPUFuncOp kernel) {
  AttentionView view;
  AttentionKernelEmitter(b, shape, view, outType, softmax)
      .emitCombine(kernel, kernel.getArgument(0), kernel.getArgument(1),
                   kernel.getArgument(2));
}
