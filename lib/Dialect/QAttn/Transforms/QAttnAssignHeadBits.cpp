//===- QAttnAssignHeadBits.cpp - headwise mixed 2/4-bit precision ---------===//
//
// Part of the qattn project.
//
// The heads whose keys/values quantize best (small gap, uniform channels)
// lose the least at low precision: priority = gap x std of per-channel gaps.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Dialect/QAttn/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <numeric>

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNASSIGNHEADBITS
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"
} // namespace mlir::qattn

using namespace mlir;
using namespace mlir::qattn;

static constexpr StringLiteral kStatsAttr = "qattn.head_stats";

namespace {
// Calibration statistics are a few numbers per head: far below these.
constexpr uint64_t kMaxStatsBytes = 16 << 20;
constexpr int64_t kMaxStatsNesting = 64;

struct QAttnAssignHeadBitsPass
    : qattn::impl::QAttnAssignHeadBitsBase<QAttnAssignHeadBitsPass> {
  using QAttnAssignHeadBitsBase::QAttnAssignHeadBitsBase;

  /// The statistics file's entries (`stats-file`), read once.
  std::optional<llvm::json::Object> file;

  /// `gaps` and `gap_stds` of the entry `key` of the statistics file.
  LogicalResult fromFile(ProgressiveQuantizeOp op, StringRef key,
                         SmallVector<double> &gaps, SmallVector<double> &stds) {
    if (!file)
      return op.emitOpError() << "names statistics \"" << key
                              << "\" but no stats-file was given";
    const llvm::json::Object *entry = file->getObject(key);
    if (!entry)
      return op.emitOpError() << "has no entry \"" << key << "\" in "
                              << statsFile;
    for (auto [name, out] : {std::pair<StringRef, SmallVector<double> *>{"gaps", &gaps},
                             {"gap_stds", &stds}}) {
      const llvm::json::Array *values = entry->getArray(name);
      if (!values)
        return op.emitOpError() << "expected \"" << name << "\": [numbers] in "
                                << statsFile << " entry \"" << key << "\"";
      for (const llvm::json::Value &v : *values) {
        std::optional<double> d = v.getAsNumber();
        if (!d)
          return op.emitOpError() << "expected numbers in \"" << name
                                  << "\" of " << statsFile << " entry \""
                                  << key << "\"";
        out->push_back(*d);
      }
    }
    return success();
  }

  /// Per-head priorities from the op's statistics: the attribute itself, or
  /// the statistics file's entry it names.
  FailureOr<SmallVector<double>> priorities(ProgressiveQuantizeOp op,
                                            int64_t heads) {
    SmallVector<double> gaps, stds;
    Attribute attr = op->getAttr(kStatsAttr);
    if (auto key = dyn_cast<StringAttr>(attr)) {
      if (failed(fromFile(op, key.getValue(), gaps, stds)))
        return failure();
    } else {
      auto stats = dyn_cast<DictionaryAttr>(attr);
      auto g = stats ? stats.getAs<DenseF64ArrayAttr>("gaps") : nullptr;
      auto s = stats ? stats.getAs<DenseF64ArrayAttr>("gap_stds") : nullptr;
      if (!g || !s)
        return op.emitOpError() << "expected " << kStatsAttr
                                << " = {gaps = array<f64: ...>, gap_stds = "
                                   "array<f64: ...>} or the name of an entry "
                                   "of the stats-file";
      gaps.assign(g.asArrayRef().begin(), g.asArrayRef().end());
      stds.assign(s.asArrayRef().begin(), s.asArrayRef().end());
    }
    if (int64_t(gaps.size()) != heads || int64_t(stds.size()) != heads)
      return op.emitOpError() << "expected " << heads
                              << " gaps and gap_stds (one per head), got "
                              << gaps.size() << " and " << stds.size();
    SmallVector<double> p;
    for (auto [g, s] : llvm::zip(gaps, stds))
      p.push_back(g * s);
    return p;
  }

  /// The deepest nesting of arrays and objects in JSON text (outside
  /// strings), found without recursion.
  static int64_t nestingDepth(StringRef text) {
    int64_t depth = 0, deepest = 0;
    bool inString = false, escaped = false;
    for (char c : text) {
      if (inString) {
        if (escaped)
          escaped = false;
        else if (c == '\\')
          escaped = true;
        else if (c == '"')
          inString = false;
      } else if (c == '"') {
        inString = true;
      } else if (c == '[' || c == '{') {
        deepest = std::max(deepest, ++depth);
      } else if (c == ']' || c == '}') {
        --depth;
      }
    }
    return deepest;
  }

  /// Reads `stats-file` (a JSON object of entries); false after an error.
  bool readFile() {
    if (statsFile.empty())
      return true;
    auto fail = [&](const Twine &why) {
      mlir::emitError(getOperation().getLoc()) << "qattn-assign-head-bits: " << statsFile
                                 << ": " << why;
      return false;
    };
    // A regular file of bounded size and nesting: llvm::json reads all of
    // its input and recurses once per level (/dev/zero exhausted memory,
    // 50,000 nested arrays the stack).
    llvm::sys::fs::file_status status;
    if (std::error_code ec = llvm::sys::fs::status(statsFile, status)) {
      mlir::emitError(getOperation().getLoc()) << "qattn-assign-head-bits: cannot read "
                                 << statsFile << ": " << ec.message();
      return false;
    }
    if (status.type() != llvm::sys::fs::file_type::regular_file)
      return fail("not a regular file");
    if (status.getSize() > kMaxStatsBytes)
      return fail("larger than " + Twine(kMaxStatsBytes) + " bytes");
    auto buffer = llvm::MemoryBuffer::getFile(statsFile);
    if (!buffer) {
      mlir::emitError(getOperation().getLoc()) << "qattn-assign-head-bits: cannot read "
                                 << statsFile << ": "
                                 << buffer.getError().message();
      return false;
    }
    if (nestingDepth((*buffer)->getBuffer()) > kMaxStatsNesting)
      return fail("nested deeper than " + Twine(kMaxStatsNesting) + " levels");
    llvm::Expected<llvm::json::Value> json =
        llvm::json::parse((*buffer)->getBuffer());
    if (!json) {
      mlir::emitError(getOperation().getLoc()) << "qattn-assign-head-bits: " << statsFile
                                 << " is not JSON: "
                                 << llvm::toString(json.takeError());
      return false;
    }
    if (!json->getAsObject()) {
      mlir::emitError(getOperation().getLoc()) << "qattn-assign-head-bits: expected " << statsFile
                                 << " to hold an object of entries";
      return false;
    }
    file = std::move(*json->getAsObject());
    return true;
  }

  LogicalResult assign(ProgressiveQuantizeOp op) {
    RankedTensorType in = op.getInput().getType();
    int64_t heads = in.getDimSize(1), headDim = in.getDimSize(3);
    FailureOr<SmallVector<double>> p = priorities(op, heads);
    if (failed(p))
      return failure();
    int64_t low = numLow >= 0 ? int64_t(numLow) : heads / 2;
    if (low > heads)
      return op.emitOpError() << "cannot put " << low << " of " << heads
                              << " heads at low precision";
    // The lowest priorities first; a stable sort keeps lower indices high.
    SmallVector<int64_t> order = llvm::to_vector(llvm::seq<int64_t>(0, heads));
    llvm::stable_sort(order, [&](int64_t a, int64_t b) {
      return (*p)[a] < (*p)[b] || ((*p)[a] == (*p)[b] && a > b);
    });
    SmallVector<int64_t> bits(heads, highBits);
    for (int64_t i = 0; i < low; ++i)
      bits[order[i]] = lowBits;
    Stage2Attr old = op.getScheme();
    auto scheme = Stage2Attr::getChecked(
        [&] { return op.emitOpError(); }, &getContext(), ArrayRef<int64_t>(bits),
        old.getGroup(), old.getOrder(), old.getAnchor());
    if (!scheme)
      return failure();

    // Every reader of the codes must learn the new layout.
    for (OpOperand &use : op.getCodes().getUses()) {
      auto attn = dyn_cast<AttentionOp>(use.getOwner());
      if (!attn || (use.get() != attn.getK() && use.get() != attn.getV()))
        return use.getOwner()->emitOpError()
               << "uses codes whose layout qattn-assign-head-bits changes";
    }
    RankedTensorType codes = op.getCodes().getType();
    op.getCodes().setType(RankedTensorType::get(
        {codes.getDimSize(0), codes.getDimSize(1),
         scheme.getRowBytes(heads, headDim)},
        codes.getElementType()));
    op.setSchemeAttr(scheme);
    op->removeAttr(kStatsAttr);
    for (Operation *user : op.getCodes().getUsers()) {
      auto attn = cast<AttentionOp>(user);
      if (attn.getK() == op.getCodes())
        attn.setKStage2Attr(scheme);
      if (attn.getV() == op.getCodes())
        attn.setVStage2Attr(scheme);
    }
    return success();
  }

  void runOnOperation() override {
    if (lowBits < 2 || lowBits > 4 || highBits < 2 || highBits > 4) {
      mlir::emitError(getOperation().getLoc(), "qattn-assign-head-bits: bit widths must be 2, 3 or 4");
      return signalPassFailure();
    }
    if (!readFile())
      return signalPassFailure();
    WalkResult result = getOperation()->walk([&](ProgressiveQuantizeOp op) {
      if (!op->hasAttr(kStatsAttr))
        return WalkResult::advance();
      return failed(assign(op)) ? WalkResult::interrupt()
                                : WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    // The attention ops' verifiers check the new types and schemes agree.
    if (failed(mlir::verify(getOperation())))
      signalPassFailure();
  }
};
} // namespace
