//===- RaiseChain.cpp - the attention chain for qattn-raise-attention -----===//
//
// Part of the qattn project.
//
// Joins the pieces: from a softmax forward to the P.V contraction that reads
// its probabilities, back through the scaling and masking steps to QK^T, and
// from both contractions to the tensors Q, K and V. The checks that decide
// whether qattn.attention can take the chain (static shapes, matching head
// dims, KV heads dividing the query heads) are here too, each with the
// sentence the remark gives.
//
//===----------------------------------------------------------------------===//

#include "RaiseAttention.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/DebugLog.h"

#include <cmath>

#define DEBUG_TYPE "qattn-raise-attention"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::raise;

/// A type as the remarks print it.
static std::string typeStr(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

bool raise::isAttentionShaped(Operation *site) {
  if (!isSoftmaxSite(site))
    return false;
  // Any reshape counts here: a chain the matcher cannot follow still gets
  // its remark.
  Value probs = site->getResult(0);
  if (getContractionUser(probs, /*anyReshape=*/true))
    return true;
  // A decomposed softmax divides its exponentials before P.V.
  for (Operation *user : probs.getUsers())
    if (isa<linalg::LinalgOp>(user) && user->getNumResults() == 1 &&
        getContractionUser(user->getResult(0), /*anyReshape=*/true))
      return true;
  return false;
}

/// Whether `v` is computed, through elementwise and reshape ops, from a
/// contraction: tells the scores from the masks an op combines them with.
static bool reachesContraction(Value v, int depth = 8) {
  Operation *def = v.getDefiningOp();
  if (!def || depth == 0)
    return false;
  if (auto op = dyn_cast<linalg::LinalgOp>(def)) {
    if (op.getNumReductionLoops() != 0)
      return op.getNumDpsInputs() >= 2;
    return llvm::any_of(op.getDpsInputs(), [&](Value input) {
      return reachesContraction(input, depth - 1);
    });
  }
  if (getLeadingReshape(v) || def->getName().getDialectNamespace() == "arith")
    return llvm::any_of(def->getOperands(), [&](Value operand) {
      return reachesContraction(operand, depth - 1);
    });
  return false;
}

/// The operand of a step between QK^T and the softmax that carries the
/// scores.
static FailureOr<Value> scoresOperand(MatchState &state, Operation *step) {
  SmallVector<Value> candidates;
  auto operands = isa<linalg::LinalgOp>(step)
                      ? cast<linalg::LinalgOp>(step).getDpsInputs()
                      : step->getOperands();
  for (Value operand : operands)
    if (isa<RankedTensorType>(operand.getType()) &&
        reachesContraction(operand) && !llvm::is_contained(candidates, operand))
      candidates.push_back(operand);
  if (candidates.size() != 1)
    return state.fail(step, candidates.empty()
                                ? "does not combine the scores with constants "
                                  "and masks only"
                                : "combines the scores with another computed "
                                  "tensor");
  return candidates.front();
}

/// The product of all but the last two dims.
static int64_t leadingSize(RankedTensorType type) {
  int64_t n = 1;
  for (int64_t d = 0; d + 2 < type.getRank(); ++d)
    n *= type.getDimSize(d);
  return n;
}

FailureOr<AttentionMatch> raise::matchAttention(MatchState &state,
                                                Operation *site) {
  FailureOr<SoftmaxMatch> sm = matchSoftmax(state, site);
  if (failed(sm))
    return failure();

  // qattn.attention takes dynamic batch and capacity, but the quantizers the
  // rewrite needs for K and V do not.
  auto scoresType = cast<RankedTensorType>(sm->scores.getType());
  int64_t rank = scoresType.getRank();
  if (scoresType.isDynamicDim(rank - 2))
    return state.fail(site, "the number of queries is dynamic (scores " +
                                typeStr(scoresType) +
                                "): qattn.attention takes static queries, "
                                "heads and head dimension");
  if (!scoresType.hasStaticShape())
    return state.fail(
        site, "the scores " + typeStr(scoresType) +
                  " have a dynamic key count or batch: qattn.attention "
                  "accepts a dynamic batch and cache capacity, but "
                  "qattn.quantize and qattn.progressive_quantize, which "
                  "quantize K and V here, take static shapes only");

  // P.V.
  linalg::LinalgOp pv = getContractionUser(sm->probs);
  if (!pv && getContractionUser(sm->probs, /*anyReshape=*/true))
    return state.fail(site, "the probabilities reach the P.V contraction "
                            "through a reshape of more than the batch and "
                            "head dims (as reshape propagation leaves unit "
                            "dims); only reshapes that keep the query and key "
                            "dims are followed");
  if (!pv)
    return state.fail(site, "softmax result is not the left operand of a "
                            "contraction");
  stripLeadingReshapes(pv.getDpsInputOperand(0)->get(), &state);
  FailureOr<Contraction> pvc =
      matchContraction(state, pv, "the P.V contraction", bool(sm->rowSums));
  if (failed(pvc))
    return failure();
  if (sm->rowSums &&
      (!pvc->rowDivisor ||
       stripLeadingReshapes(pvc->rowDivisor, &state) != sm->rowSums))
    return state.fail(pv, "the P.V contraction does not divide by the "
                          "softmax's row sums");
  if (pvc->scale != 1.0)
    return state.fail(pv, "the P.V contraction scales its products");
  state.matched.insert(pv);

  // Back from the softmax through the scaling and masking steps to QK^T.
  ScoreTerms terms;
  terms.rows = scoresType.getDimSize(rank - 2);
  terms.cols = scoresType.getDimSize(rank - 1);
  terms.masked.assign(terms.rows * terms.cols, 0);
  Value scores = sm->scores;
  linalg::LinalgOp qk;
  while (true) {
    scores = stripLeadingReshapes(scores, &state);
    Operation *def = scores.getDefiningOp();
    if (!def)
      return state.fail(site, "softmax input is not computed by linalg ops");
    auto linalgDef = dyn_cast<linalg::LinalgOp>(def);
    if (linalgDef && linalgDef.getNumReductionLoops() != 0) {
      qk = linalgDef;
      break;
    }
    FailureOr<Value> next = scoresOperand(state, def);
    if (failed(next) || failed(matchScoreStep(state, def, *next, terms)))
      return failure();
    state.matched.insert(def);
    scores = *next;
  }
  FailureOr<Contraction> qkc =
      matchContraction(state, qk, "the QK^T contraction", false);
  if (failed(qkc))
    return failure();
  if (!(qkc->scale > 0.0) || !std::isfinite(qkc->scale))
    return state.fail(qk, "scales the scores by " + formatDouble(qkc->scale) +
                              " (only positive finite scales are raised)");
  state.matched.insert(qk);
  AttentionMatch m;
  m.scale = terms.scale * qkc->scale;
  if (failed(checkCausal(state, site, terms, m.causal)))
    return failure();

  // The operands, in the views the contractions read: K is read as it is or
  // as K^T (then a transpose of K), V as V or V^T likewise.
  m.q = peelOperand(qkc->lhs, state);
  if (m.q.transposed || m.q.repeat != 1)
    return state.fail(qk, "reads Q through a transpose or a broadcast");
  m.k = peelOperand(qkc->rhs, state);
  if (qkc->rhsReducedLast == m.k.transposed)
    return state.fail(qk, "reads K^T [..., d, Nk] that is not a transpose of "
                          "K [..., Nk, d]");
  m.k.repeat *= qkc->rhsRepeat;
  m.v = peelOperand(pvc->rhs, state);
  m.v.repeat *= pvc->rhsRepeat;
  if (pvc->rhsReducedLast != m.v.transposed)
    return state.fail(pv, "reads V^T [..., d, Nk] that is not a transpose of "
                          "V [..., Nk, d]");

  auto qType = cast<RankedTensorType>(m.q.base.getType());
  auto kType = cast<RankedTensorType>(m.k.base.getType());
  auto vType = cast<RankedTensorType>(m.v.base.getType());
  auto outType = cast<RankedTensorType>(pv->getResult(0).getType());
  // The result may keep a repeat dim of the heads (rank 5); the operands
  // are qattn's [B, H, N, d] or fewer leading dims.
  for (RankedTensorType t : {qType, kType, vType, outType})
    if (!t.hasStaticShape() || t.getRank() < 2 ||
        t.getRank() > (t == outType ? 5 : 4) ||
        !isa<Float32Type, Float16Type, BFloat16Type>(t.getElementType()))
      return state.fail(pv, "attention operands and result must be static "
                            "f32, f16 or bf16 tensors of rank 2 to 4, got " +
                                typeStr(t));
  int64_t d = qType.getDimSize(qType.getRank() - 1);
  if (vType.getDimSize(vType.getRank() - 1) != d)
    return state.fail(pv, "value head dimension " +
                              Twine(vType.getDimSize(vType.getRank() - 1)) +
                              " differs from the query's " + Twine(d));
  if (kType.getShape() != vType.getShape() || m.k.repeat != m.v.repeat)
    return state.fail(pv, "keys and values differ in shape or in how they "
                          "are repeated to the query heads");
  int64_t batch = qType.getRank() == 4 ? qType.getDimSize(0) : 1;
  if (leadingSize(kType) % batch != 0)
    return state.fail(pv, "the KV heads do not split into the query's batch "
                          "of " +
                              Twine(batch));
  if (leadingSize(kType) * m.k.repeat != leadingSize(qType))
    return state.fail(pv, "query heads are not a multiple of the KV heads");

  // The intermediates may not be used elsewhere: the chain is removed.
  for (Operation *op : state.matched)
    if (op != pv)
      for (Operation *user : op->getUsers())
        if (!state.matched.contains(user))
          return state.fail(op, "has a result used outside the attention");
  m.root = pv;
  m.matched.assign(state.matched.begin(), state.matched.end());
  LDBG() << "matched " << m.matched.size() << " ops for " << *site;
  return m;
}
