//===- QAttnRaiseAttention.cpp - plain linalg attention to qattn ops ------===//
//
// Part of the qattn project.
//
// An ML compiler's attention arrives as upstream ops on tensors: a QK^T
// contraction, elementwise scaling and masking, a softmax and a P.V
// contraction. Recognizing that chain lets such a compiler adopt qattn's
// quantized KV cache by adding one pass, with the scheme as pass options.
//
// The matchers (RaiseAttention.h) anchor on the softmax, the part no other
// subgraph shares, and walk out from it. Candidates are matched first and
// rewritten afterwards, rather than by a greedy pattern, so that each
// almost-match is diagnosed exactly once with the reason it was left alone.
// The rewrite reshapes the operands into qattn's [B, H, N, d] and the
// result back into the shape the program used.
//
//===----------------------------------------------------------------------===//

#include "RaiseAttention.h"

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Dialect/QAttn/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "qattn-raise-attention"

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNRAISEATTENTION
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"
} // namespace mlir::qattn

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::raise;

/// The shortest decimal of the f32 attribute the scale becomes.
static std::string formatFloat(double d) {
  SmallString<16> s;
  APFloat(float(d)).toString(s);
  return s.str().str();
}

//===----------------------------------------------------------------------===//
// Reshapes between the program's views and [B, H, N, d]
//===----------------------------------------------------------------------===//

/// `x` [..., N, d] as [lead..., N, d]: its leading dims collapsed and
/// expanded again (one reshape where either side has none); no op where they
/// already are `lead`.
static Value reshapeLeading(OpBuilder &b, Location loc, Value x,
                            ArrayRef<int64_t> lead) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.drop_back(2) == lead)
    return x;
  auto span = [](int64_t from, int64_t to) {
    ReassociationIndices group;
    for (int64_t i = from; i <= to; ++i)
      group.push_back(i);
    return group;
  };
  int64_t nLead = lead.size();
  SmallVector<int64_t> newShape(lead);
  newShape.append({shape[rank - 2], shape[rank - 1]});
  auto newType = RankedTensorType::get(newShape, type.getElementType());
  // [N, d] -> [lead..., N, d] and back.
  if (rank == 2)
    return tensor::ExpandShapeOp::create(
        b, loc, newType, x,
        SmallVector<ReassociationIndices>{span(0, nLead), {nLead + 1}});
  if (nLead == 0)
    return tensor::CollapseShapeOp::create(
        b, loc, x,
        SmallVector<ReassociationIndices>{span(0, rank - 2), {rank - 1}});
  // Through [P, N, d].
  if (rank > 3)
    x = tensor::CollapseShapeOp::create(
        b, loc, x,
        SmallVector<ReassociationIndices>{
            span(0, rank - 3), {rank - 2}, {rank - 1}});
  if (nLead == 1)
    return x;
  return tensor::ExpandShapeOp::create(
      b, loc, newType, x,
      SmallVector<ReassociationIndices>{
          span(0, nLead - 1), {nLead}, {nLead + 1}});
}

namespace {
/// The quantized form of K or V: qattn.quantize, then
/// qattn.progressive_quantize unless the scheme keeps int8.
struct QuantizedKV {
  Value data, scales, groupScales, zeros;
  Stage2Attr stage2;
};

struct QAttnRaiseAttentionPass
    : qattn::impl::QAttnRaiseAttentionBase<QAttnRaiseAttentionPass> {
  using QAttnRaiseAttentionBase::QAttnRaiseAttentionBase;

  Stage1Attr stage1;
  Stage2Anchor stage2Anchor = Stage2Anchor::zero;
  Stage2FitAttr fitAttr; // null for the default minmax

  /// Validates the options into attributes; false after an error.
  bool parseOptions() {
    ModuleOp module = getOperation();
    auto error = [&]() {
      return mlir::emitError(module.getLoc()) << "qattn-raise-attention: ";
    };
    for (auto [name, bits] : {std::pair("k-bits", int64_t(kBits)),
                              std::pair("v-bits", int64_t(vBits))})
      if (bits != 8 && (bits < 2 || bits > 4)) {
        error() << name
                << " must be 8 (stage 1 only) or 2, 3, 4 (stage 2), got "
                << bits;
        return false;
      }
    if (block <= 0 || group <= 0 || block % group != 0) {
      error() << "expected a positive group (" << int64_t(group)
              << ") that divides the positive block (" << int64_t(block) << ")";
      return false;
    }
    std::optional<Stage2Anchor> a = symbolizeStage2Anchor(anchor);
    if (!a) {
      error() << "anchor must be zero or min, got '" << anchor << "'";
      return false;
    }
    stage2Anchor = *a;
    std::optional<Stage2Fit> f = symbolizeStage2Fit(fit);
    if (!f) {
      error() << "fit must be minmax or mse, got '" << fit << "'";
      return false;
    }
    if (*f != Stage2Fit::minmax)
      fitAttr = Stage2FitAttr::get(&getContext(), *f);
    stage1 = Stage1Attr::get(&getContext(), block, ScaleType::f32,
                             Granularity::block);
    return true;
  }

  /// qattn.quantize of a float [B, H, N, d] tensor.
  std::pair<Value, Value> quantize(OpBuilder &b, Location loc, Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    auto dataType = RankedTensorType::get(type.getShape(), b.getI8Type());
    auto scalesType = RankedTensorType::get(
        stage1.getScaleShape(type.getShape()), stage1.getScaleElementType());
    auto op = QuantizeOp::create(b, loc, dataType, scalesType, x, stage1);
    return {op.getData(), op.getScales()};
  }

  QuantizedKV quantizeKV(OpBuilder &b, Location loc, Value x, int64_t bits) {
    QuantizedKV kv;
    std::tie(kv.data, kv.scales) = quantize(b, loc, x);
    if (bits == 8)
      return kv;
    ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
    kv.stage2 = Stage2Attr::get(&getContext(), ArrayRef<int64_t>{bits}, group,
                                PackOrder::lsb_first, stage2Anchor);
    auto i8 = b.getI8Type();
    auto codesType = RankedTensorType::get(
        {shape[0], shape[2], kv.stage2.getRowBytes(shape[1], shape[3])}, i8);
    auto groupType = RankedTensorType::get(
        {shape[0], shape[1], (shape[2] + group - 1) / group, shape[3]}, i8);
    auto op = ProgressiveQuantizeOp::create(
        b, loc, codesType, groupType, groupType, kv.data, kv.stage2, fitAttr);
    kv.data = op.getCodes();
    kv.groupScales = op.getScales();
    kv.zeros = op.getZeros();
    return kv;
  }

  void raise(const AttentionMatch &m) {
    OpBuilder b(m.root);
    Location loc = m.root->getLoc();
    // [B, Hq, Nq, d] and [B, Hkv, Nk, d]: the batch is the query's leading
    // dim when it has four, and the linear batch index the contractions
    // share splits into it and the heads.
    auto qType = cast<RankedTensorType>(m.q.base.getType());
    auto kType = cast<RankedTensorType>(m.k.base.getType());
    auto rootType = cast<RankedTensorType>(m.root->getResult(0).getType());
    int64_t batch = qType.getRank() == 4 ? qType.getDimSize(0) : 1;
    int64_t qHeads = 1, kvHeads = 1;
    for (int64_t d = 0; d + 2 < qType.getRank(); ++d)
      qHeads *= qType.getDimSize(d);
    for (int64_t d = 0; d + 2 < kType.getRank(); ++d)
      kvHeads *= kType.getDimSize(d);
    qHeads /= batch;
    kvHeads /= batch;
    Value q0 = reshapeLeading(b, loc, m.q.base, {batch, qHeads});
    Value k0 = reshapeLeading(b, loc, m.k.base, {batch, kvHeads});
    Value v0 = reshapeLeading(b, loc, m.v.base, {batch, kvHeads});

    Value q = q0, qScales;
    Stage1Attr qStage1;
    if (quantizeQ) {
      std::tie(q, qScales) = quantize(b, loc, q0);
      qStage1 = stage1;
    }
    QuantizedKV k = quantizeKV(b, loc, k0, kBits);
    QuantizedKV v = quantizeKV(b, loc, v0, vBits);
    ArrayRef<int64_t> qShape = cast<RankedTensorType>(q0.getType()).getShape();
    auto resultType = RankedTensorType::get(
        {batch, qHeads, qShape[2], qShape[3]}, rootType.getElementType());
    auto attn = AttentionOp::create(
        b, loc, resultType, q, qScales, k.data, k.scales, k.groupScales,
        k.zeros, v.data, v.scales, v.groupScales, v.zeros,
        /*k_buffer=*/Value(), Value(), Value(), Value(), /*kv_lens=*/Value(),
        /*page_table=*/Value(), qStage1, stage1, k.stage2, stage1, v.stage2,
        b.getF32FloatAttr(float(m.scale)), m.causal, /*softmax=*/SoftmaxAttr(),
        /*gpu_tiling=*/GpuTilingAttr());
    LDBG() << "raised " << attn;
    mlir::emitRemark(loc)
        << "qattn-raise-attention: raised to qattn.attention ("
        << (m.causal ? "causal, " : "") << "scale " << formatFloat(m.scale)
        << ", Hq " << qHeads << ", Hkv " << kvHeads << ")";
    ++numRaised;

    // A program that flattened batch and heads expands the result again:
    // that reshape takes the attention as it is.
    SmallVector<Operation *> dead(m.matched.begin(), m.matched.end());
    Value result = m.root->getResult(0);
    Operation *user = result.hasOneUse() ? *result.getUsers().begin() : nullptr;
    if (user && user->getNumResults() == 1 &&
        getLeadingReshape(user->getResult(0)) == user &&
        user->getResult(0).getType() == resultType) {
      user->getResult(0).replaceAllUsesWith(attn.getResult());
      dead.push_back(user);
    } else {
      OpBuilder after(m.root);
      result.replaceAllUsesWith(reshapeLeading(
          after, loc, attn.getResult(), rootType.getShape().drop_back(2)));
    }

    // The chain is dead now, and so are the fills, broadcasts and transposes
    // that only it used.
    SmallVector<Operation *> worklist(dead.begin(), dead.end());
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!op->use_empty() || !isMemoryEffectFree(op))
        continue;
      // Bodies capture constants (the scale, -inf) from above.
      SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
      getUsedValuesDefinedAbove(op->getRegions(), used);
      for (Value value : used)
        if (Operation *def = value.getDefiningOp())
          worklist.push_back(def);
      op->erase();
      // An op can be queued twice (two operands); skip the stale entry.
      llvm::erase(worklist, op);
    }
  }

  void runOnOperation() override {
    if (!parseOptions())
      return signalPassFailure();
    SmallVector<Operation *> sites;
    getOperation()->walk([&](Operation *op) {
      // Only a softmax whose probabilities feed a contraction looks like
      // attention; a classifier's softmax is no almost-match worth a remark.
      if (!isSoftmaxSite(op))
        return;
      if (isAttentionShaped(op))
        sites.push_back(op);
      else
        LDBG() << "not an attention softmax: " << *op;
    });
    SmallVector<AttentionMatch> matches;
    bool failedStrict = false;
    for (Operation *site : sites) {
      MatchState state;
      FailureOr<AttentionMatch> m = matchAttention(state, site);
      if (succeeded(m)) {
        matches.push_back(std::move(*m));
        continue;
      }
      InFlightDiagnostic diag =
          strict ? state.at->emitError() : state.at->emitRemark();
      diag << "qattn-raise-attention: not raised: " << state.why;
      if (state.at != site)
        diag.attachNote(site->getLoc()) << "for this softmax";
      ++numLeftAlone;
      failedStrict |= strict;
    }
    if (failedStrict)
      return signalPassFailure();
    for (const AttentionMatch &m : matches)
      raise(m);
  }
};
} // namespace
