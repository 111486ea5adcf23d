//===- KernelCommon.h - shared GPU attention kernel pieces -----*- C++ -*-===//
//
// Part of the qattn project.
//
// The operand views, shapes and in-register dequantization shared by the
// warp-per-row kernel (RowsKernel.cpp), the tensor-core prefill kernels
// (MmaKernel.cpp) and the tile layer's GPU lowering.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_CONVERSION_QATTNTOGPU_KERNELCOMMON_H
#define QATTN_LIB_CONVERSION_QATTNTOGPU_KERNELCOMMON_H

#include "qattn/Conversion/FormatMath.h"
#include "qattn/Conversion/LoweringUtils.h"
#include "qattn/Conversion/Passes.h"
#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Target/Chip.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <cmath>

namespace mlir::qattn::kernels {
using namespace mlir::qattn::format;

// A warp is the unit that owns a query row.
inline constexpr int64_t kThreadsPerWarp = 32;
// wgmma's unit, and the wgmma kernel's producer (producer = warpgroup).
inline constexpr int64_t kWarpsPerWarpgroup = 4;

//===----------------------------------------------------------------------===//
// Small IR helpers
//===----------------------------------------------------------------------===//

inline Value add(ImplicitLocOpBuilder &b, Value x, Value y) {
  return addIdx(b, x, y);
}
inline Value mul(ImplicitLocOpBuilder &b, Value x, int64_t c) {
  return mulIdx(b, x, c);
}
inline Value div(ImplicitLocOpBuilder &b, Value x, int64_t c) {
  return divIdx(b, x, c);
}
inline Value rem(ImplicitLocOpBuilder &b, Value x, int64_t c) {
  return remIdx(b, x, c);
}
inline Value minIdx(ImplicitLocOpBuilder &b, Value x, Value y) {
  return arith::MinUIOp::create(b, x, y);
}
inline Value maxIdx(ImplicitLocOpBuilder &b, Value x, Value y) {
  return arith::MaxUIOp::create(b, x, y);
}
inline Value intToF32(ImplicitLocOpBuilder &b, Value v) {
  return arith::SIToFPOp::create(b, b.getF32Type(), v);
}

/// A constant vector of zeros.
inline Value zeros(ImplicitLocOpBuilder &b, VectorType type) {
  return arith::ConstantOp::create(b, cast<TypedAttr>(b.getZeroAttr(type)));
}

/// Sum over the 32 lanes of a warp; every lane gets the total.
inline Value warpSum(ImplicitLocOpBuilder &b, Value v) {
  for (int32_t offset = kThreadsPerWarp / 2; offset > 0; offset /= 2) {
    auto shuffle = gpu::ShuffleOp::create(b, v, offset, kThreadsPerWarp,
                                          gpu::ShuffleMode::XOR);
    v = arith::AddFOp::create(b, v, shuffle.getShuffleResult());
  }
  return v;
}

/// Combines `v` over the lanes that differ from this one only in the bits
/// of `offsets` (xor shuffles); every one of them gets the result.
template <typename CombineOp>
Value overLanes(ImplicitLocOpBuilder &b, Value v, ArrayRef<int32_t> offsets) {
  for (int32_t offset : offsets) {
    auto sh = gpu::ShuffleOp::create(b, v, offset, kThreadsPerWarp,
                                     gpu::ShuffleMode::XOR);
    v = CombineOp::create(b, v, sh.getShuffleResult());
  }
  return v;
}

/// Combines `v` over the 4 lanes 4g .. 4g+3 of an mma fragment's row group
/// (they hold one row's columns); every lane gets the result.
template <typename CombineOp>
Value overQuad(ImplicitLocOpBuilder &b, Value v) {
  return overLanes<CombineOp>(b, v, {1, 2});
}

/// Combines `v` over the 8 lanes t, 4 + t, ..., 28 + t of an mma fragment
/// (they hold one column's rows); every lane gets the result.
template <typename CombineOp>
Value overColumn(ImplicitLocOpBuilder &b, Value v) {
  return overLanes<CombineOp>(b, v, {4, 8, 16});
}

/// An inline-PTX op returning `type`, or nothing for a null `type` (for
/// instructions NVVM has no op for); volatile unless `pure` (then LLVM may
/// move, merge or drop it).
inline Value inlineAsm(ImplicitLocOpBuilder &b, Type type, ValueRange operands,
                       StringRef ptx, StringRef constraints, bool pure = false) {
  auto op = LLVM::InlineAsmOp::create(
      b, type ? TypeRange(type) : TypeRange(), operands, b.getStringAttr(ptx),
      b.getStringAttr(constraints),
      /*has_side_effects=*/pure ? UnitAttr() : b.getUnitAttr(), UnitAttr(),
      LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr());
  return type ? op.getResult(0) : Value();
}

/// The address of byte `at` of `memref` (its aligned pointer plus `at`), as
/// `type`: i64 for a global buffer, i32 for the shared window (inline PTX
/// operands).
inline Value byteAddress(ImplicitLocOpBuilder &b, Value memref, Value at,
                         Type type) {
  // Widened before the add: with 32-bit indices (narrowKernelIndices), a
  // global pointer is then found by its one use, this cast.
  Value base = arith::IndexCastUIOp::create(
      b, type, memref::ExtractAlignedPointerAsIndexOp::create(b, memref));
  return arith::AddIOp::create(b, base,
                               arith::IndexCastUIOp::create(b, type, at));
}

/// cp.async of `bytes` (4, 8 or 16) at global address `src` (i64) to shared
/// address `dst` (i32). Inline PTX rather than nvgpu.device_async_copy, whose
/// lowering fixes 64-bit indices (narrowKernelIndices wants 32-bit ones);
/// 16-byte copies bypass L1 (.cg, which takes no other size); `l2Line` asks
/// L2 for the whole 128-byte line (.L2::128B, which the NVVM op lacks);
/// `ordered` keeps LLVM from moving memory accesses across it (a ring slot
/// read back with plain loads and then copied into again).
inline void copyAsync(ImplicitLocOpBuilder &b, Value dst, Value src,
                      int64_t bytes, bool l2Line, bool ordered) {
  std::string ptx = std::string("{ .reg .u64 g; cvta.to.global.u64 g, $1; "
                                "cp.async.") +
                    (bytes == 16 ? "cg" : "ca") + ".shared.global" +
                    (l2Line ? ".L2::128B" : "") + " [$0], [g], " +
                    std::to_string(bytes) + "; }";
  inlineAsm(b, Type(), ValueRange{dst, src}, ptx,
            ordered ? "r,l,~{memory}" : "r,l");
}

/// How far (base 2) a score may pass its row's reference max before the
/// reference moves, in the online softmax of the decode and tensor-core
/// prefill kernels (lazy maxima): p = 2^(s - max) stays <= 2^8.
inline constexpr double kLazyMaxLog2 = 8.0;

/// Makes `launch` an early launch (kEarlyLaunchAttrName) after `previous`,
/// the kernel of the launch before it: `previous` lets it start once every
/// one of its CTAs runs (griddepcontrol.launch_dependents, first thing), so
/// that its CTAs take SMs as `previous`'s retire, their prologue overlapping
/// that one's tail. `launch`'s kernel must wait (waitForEarlierLaunches)
/// before it reads what `previous` wrote.
inline void markEarlyLaunch(gpu::LaunchFuncOp launch, gpu::GPUFuncOp previous) {
  launch->setAttr(kEarlyLaunchAttrName, UnitAttr::get(launch.getContext()));
  OpBuilder b = OpBuilder::atBlockBegin(&previous.front());
  NVVM::GriddepcontrolOp::create(b, launch.getLoc(),
                                 NVVM::GridDepActionKind::launch_dependents);
}

/// Waits until the launches before this one (an early launch, see
/// kEarlyLaunchAttrName) have finished and their writes are visible; at
/// once when the launch was not early.
inline void waitForEarlierLaunches(ImplicitLocOpBuilder &b) {
  NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
}

/// 2^x with subnormal inputs and results flushed to zero: ex2.approx.ftz.f32
/// is one SFU instruction, while the plain form that math.exp2 lowers to
/// wraps it in a range test and two multiplies. A softmax term below 2^-126
/// is lost anyway: sums hold the row max's term 1, and P.V takes f16 or
/// 2^-126-scale products.
inline Value exp2Ftz(ImplicitLocOpBuilder &b, Value x) {
  return inlineAsm(b, b.getF32Type(), x, "ex2.approx.ftz.f32 $0, $1;", "=f,f",
                   /*pure=*/true);
}

/// `keep`, or what `then` makes from it when `laneCond` holds on any lane of
/// the warp: a warp-uniform branch (vote.sync), for work that is rarely
/// needed and must not diverge (shuffles inside `then`).
inline SmallVector<Value>
ifAnyLane(ImplicitLocOpBuilder &b, Value laneCond, ValueRange keep,
          function_ref<SmallVector<Value>()> then) {
  Value all = arith::ConstantIntOp::create(b, b.getI32Type(), -1);
  Value any = NVVM::VoteSyncOp::create(b, b.getI1Type(), all, laneCond,
                                       NVVM::VoteSyncKind::any);
  auto ifOp = scf::IfOp::create(b, keep.getTypes(), any, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, then());
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, keep);
  return SmallVector<Value>(ifOp.getResults());
}

/// The output accumulators of an mma warp, each times its row corrections
/// (`corrFor(i)`: a vector like accs[i], made only inside the branch),
/// computed only when some row of the warp got a new max (rare after the
/// first key tiles).
inline SmallVector<Value>
rescaleIfGrew(ImplicitLocOpBuilder &b, ValueRange oldMax, ValueRange newMax,
              function_ref<Value(int64_t)> corrFor, ValueRange accs) {
  Value grew;
  for (auto [o, n] : llvm::zip_equal(oldMax, newMax)) {
    Value g = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, n, o);
    grew = grew ? arith::OrIOp::create(b, grew, g).getResult() : g;
  }
  return ifAnyLane(b, grew, accs, [&] {
    SmallVector<Value> scaled;
    for (auto [i, acc] : llvm::enumerate(accs))
      scaled.push_back(arith::MulFOp::create(b, acc, corrFor(i)));
    return scaled;
  });
}

/// The same for accumulators in the mma C layout (rows g and g + 8 of every
/// 2x2 f32 fragment, corrected by `corr[0]` and `corr[1]`).
inline SmallVector<Value> rescaleIfGrew(ImplicitLocOpBuilder &b,
                                        ValueRange oldMax, ValueRange newMax,
                                        ArrayRef<Value> corr, ValueRange accs) {
  return rescaleIfGrew(
      b, oldMax, newMax,
      [&](int64_t i) -> Value {
        return vector::FromElementsOp::create(
            b, cast<VectorType>(accs[i].getType()),
            ValueRange{corr[0], corr[0], corr[1], corr[1]});
      },
      accs);
}

/// Calls issue(c, at) for c = id + at, at = 0, threads, 2 threads, ...
/// below `chunks`: the pieces of a copy spread over `threads` threads, `id`
/// being this thread's index among them; only a ragged last round is
/// guarded.
inline void spreadOverRounds(ImplicitLocOpBuilder &b, Value id, int64_t threads,
                             int64_t chunks,
                             function_ref<void(Value, int64_t)> issue) {
  for (int64_t at = 0; at < chunks; at += threads) {
    Value c = addIdx(b, id, format::indexConst(b, at));
    if (chunks - at >= threads) {
      issue(c, at);
      continue;
    }
    Value active = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, c,
                                         format::indexConst(b, chunks));
    auto ifOp = scf::IfOp::create(b, active, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    issue(c, at);
  }
}

/// spreadOverRounds where the piece needs only its index c.
inline void spreadOver(ImplicitLocOpBuilder &b, Value id, int64_t threads,
                       int64_t chunks, function_ref<void(Value)> issue) {
  spreadOverRounds(b, id, threads, chunks, [&](Value c, int64_t) { issue(c); });
}

//===----------------------------------------------------------------------===//
// The operands of an attention op, by role
//===----------------------------------------------------------------------===//

/// One of K and V inside a kernel, with its format.
struct KVView {
  Value data, scales, groupScales, zeros, buffer, bufferScale;
  Stage1Attr stage1;
  Stage2Attr stage2;
};

/// Kernel-side values of an attention op's operands (null when absent).
struct AttentionView {
  Value q, qScales;
  KVView k, v;
  Stage1Attr qStage1;
};

/// Sizes and tiling shared by the kernels of one attention op.
struct AttentionShape {
  int64_t batch, qHeads, kvHeads, queries, cacheKeys, bufferKeys, headDim;
  int64_t warps, splits, keysPerStep, stages;
  bool causal;
  float scale;
  /// The prefill kernel's warpgroup variant (kernel = wgmma).
  bool wgmma = false;
  /// Its P.V on fp8 (pv = e4m3).
  bool e4m3Pv = false;
  /// Its CTAs' extra warpgroup that only moves tiles (producer =
  /// warpgroup); `warps` then counts the others.
  bool producer = false;
  /// The limits of the GPU the kernels are built for.
  ChipInfo chip = kSm90a;
  int64_t keys() const { return cacheKeys + bufferKeys; }
  /// Warps of a CTA of the main kernel: `warps`, plus the producer's.
  int64_t ctaWarps() const {
    return warps + (producer ? kWarpsPerWarpgroup : 0);
  }
  /// Threads of a CTA of the main kernel (and of the combine kernel).
  int64_t threads() const { return ctaWarps() * kThreadsPerWarp; }
  /// Output rows (batch, query head, query).
  int64_t rows() const { return batch * qHeads * queries; }
  /// Query heads that share a KV head: one warp serves them all.
  int64_t groupSize() const { return qHeads / kvHeads; }
  /// Warps of the main kernel: (batch, KV head, query).
  int64_t warpTasks() const { return batch * kvHeads * queries; }
  int64_t channelsPerLane() const { return headDim / kThreadsPerWarp; }
  int64_t rowCtas() const { return llvm::divideCeilSigned(rows(), warps); }
  int64_t taskCtas() const { return llvm::divideCeilSigned(warpTasks(), warps); }
  /// Slices start at multiples of 16 keys.
  int64_t keysPerSplit() const {
    return llvm::alignTo(llvm::divideCeilSigned(keys(), splits), 16);
  }
  /// Warps of a combine CTA (one CTA per row): about 8 splits per warp, so
  /// that a warp's loads go out in one round, between 4 and 16 warps. The
  /// grid has only rows() CTAs (32 at B1 Hq32), so the warps are its
  /// parallelism: 4 warps left B1 N128K (256 splits) 8 load rounds deep.
  int64_t combineWarps() const {
    return std::clamp<int64_t>(llvm::divideCeilSigned(splits, 8), 4, 16);
  }
};

/// Maps the kernel's block arguments (one per present operand, in operand
/// order) back to their roles.
inline AttentionView viewOperands(AttentionOp op, ValueRange args) {
  DenseMap<Value, Value> map;
  for (auto [operand, arg] : llvm::zip(op->getOperands(), args))
    map[operand] = arg;
  auto get = [&](Value v) { return v ? map.lookup(v) : Value(); };
  AttentionView view;
  view.q = get(op.getQ());
  view.qScales = get(op.getQScales());
  view.qStage1 = op.getQStage1Attr();
  view.k = {get(op.getK()), get(op.getKScales()), get(op.getKGroupScales()),
            get(op.getKZeros()), get(op.getKBuffer()), get(op.getKBufferScale()),
            op.getKStage1(), op.getKStage2Attr()};
  view.v = {get(op.getV()), get(op.getVScales()), get(op.getVGroupScales()),
            get(op.getVZeros()), get(op.getVBuffer()), get(op.getVBufferScale()),
            op.getVStage1(), op.getVStage2Attr()};
  return view;
}

//===----------------------------------------------------------------------===//
// Dequantization in registers
//===----------------------------------------------------------------------===//

/// Cached key/value element (bi, hk, j, c) as its int8 value (i32): stage 2
/// decoded in integers, or the stage-1 data. `headBits` and `headOffset`
/// describe head hk's codes when stage 2 is present.
inline Value dequantizeToInt8(ImplicitLocOpBuilder &b, const KVView &kv,
                              Value bi, Value hk, Value j, Value c,
                              int64_t headBits, Value headOffset) {
  Value q8;
  if (kv.stage2) {
    Value g = div(b, j, kv.stage2.getGroup());
    Value s2 = arith::ExtUIOp::create(b, b.getI32Type(),
                                      load(b, kv.groupScales, {bi, hk, g, c}));
    Value z2 = arith::ExtSIOp::create(b, b.getI32Type(),
                                      load(b, kv.zeros, {bi, hk, g, c}));
    Value code = unpackCode(b, c, headBits, kv.stage2.getOrder(), [&](Value byte) {
      Value v = load(b, kv.data, {bi, j, add(b, headOffset, byte)});
      return arith::ExtUIOp::create(b, b.getI32Type(), v);
    });
    q8 = stage2Decode(b, code, s2, z2, kv.stage2.getAnchor());
  } else {
    q8 = arith::ExtSIOp::create(b, b.getI32Type(), load(b, kv.data, {bi, hk, j, c}));
  }
  return q8;
}

/// Cached key/value element (bi, hk, j, c) dequantized to f32.
inline Value dequantizeCached(ImplicitLocOpBuilder &b, const KVView &kv,
                              Value bi, Value hk, Value j, Value c,
                              int64_t headBits, Value headOffset) {
  Value q8 = dequantizeToInt8(b, kv, bi, hk, j, c, headBits, headOffset);
  Value s1 = stage1ScaleAt(b, kv.scales, kv.stage1, bi, hk, j, c);
  return arith::MulFOp::create(b, intToF32(b, q8), s1);
}



/// Head hk's code width and first byte in a packed row of stage-2 codes:
/// constants when the head is known at compile time (mixed widths), else
/// computed from hk (one width for all heads). {0, null} without stage 2.
inline std::pair<int64_t, Value> headCodes(ImplicitLocOpBuilder &b,
                                           Stage2Attr s, Value hk,
                                           int64_t headDim,
                                           std::optional<int64_t> head) {
  if (!s)
    return {0, Value()};
  if (head)
    return {s.getBitsOfHead(*head),
            indexConst(b, s.getHeadByteOffset(*head, headDim))};
  int64_t bits = s.getBits().front();
  return {bits, mul(b, hk, headDim * bits / 8)};
}

/// Scratch the prefill tensor-core kernel's stage launch fills: K as int8
/// codes [batch, KV head, key, channel], V as f16 values (mmaStagedVShape),
/// one f32 scale per key [batch, KV head, key]; keys padded to whole 64-key
/// tiles (mmaStagedKeys) with zeros.
struct MmaStaged {
  Value k, v, kScales;
};
int64_t mmaStagedKeys(const AttentionShape &shape);
/// [batch, KV head, key, channel] for the mma.sync kernel; for the wgmma
/// kernel V^T by 64-key tile: [batch, KV head, tile, channel, 64].
SmallVector<int64_t> mmaStagedVShape(const AttentionShape &shape);
/// Emits the stage kernel's body (see MmaKernel.cpp) and gives its grid and
/// block size (1-D).
void emitMmaStage(ImplicitLocOpBuilder &b, const AttentionShape &shape,
                  const AttentionView &view, const MmaStaged &staged);
std::pair<int64_t, int64_t> mmaStageLaunch(const AttentionShape &shape);
/// Emits the tensor-core attention kernel's body over the staged operands;
/// it writes the whole output `out`.
void emitMmaAttention(ImplicitLocOpBuilder &b, const AttentionShape &shape,
                      const AttentionView &view, const MmaStaged &staged,
                      Type outType, Value out);
/// Grid and dynamic shared memory (the ring) of the tensor-core attention
/// kernel.
std::pair<int64_t, int64_t> mmaGrid(const AttentionShape &shape);
int64_t mmaSharedBytes(const AttentionShape &shape);
/// The CTAs per SM that the wgmma kernel asks ptxas to make room for
/// (nvvm.minctasm); 0: no request (the mma.sync kernel).
int64_t mmaMinCtasPerSM(const AttentionShape &shape);
/// Whether the wgmma kernel runs its overlapped tile loop (the next tile's
/// QK^T and this tile's P.V in flight during the next tile's softmax): one
/// warpgroup, or a producer warpgroup beside the others (which then have
/// 240 registers), and 3+ stages. It needs ~150 registers at d = 128, which
/// several warpgroups per CTA cannot have without the producer.
inline bool overlapsTiles(const AttentionShape &shape) {
  return shape.wgmma && (shape.warps == 4 || shape.producer) &&
         shape.stages >= 3;
}

/// Emits the warp kernel's body (RowsKernel.cpp); `outputs` is {out} or,
/// with several key splits, {partialAcc, partialMaxSum}.
void emitRowsAttention(ImplicitLocOpBuilder &b, const AttentionShape &shape,
                       const AttentionView &view, Type outType,
                       SoftmaxAttr softmax, ValueRange outputs);
/// Emits the body of the warp kernel's combine over `kernel`'s arguments
/// (partialAcc, partialMaxSum, out).
void emitRowsCombine(ImplicitLocOpBuilder &b, const AttentionShape &shape,
                     Type outType, SoftmaxAttr softmax, gpu::GPUFuncOp kernel);

} // namespace mlir::qattn::kernels

#endif // QATTN_LIB_CONVERSION_QATTNTOGPU_KERNELCOMMON_H
