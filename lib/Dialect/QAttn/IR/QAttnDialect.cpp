//===- QAttnDialect.cpp - qattn dialect and attributes --------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnDialect.h"
#include "qattn/Dialect/QAttn/IR/QAttnOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::qattn;

#include "qattn/Dialect/QAttn/IR/QAttnDialect.cpp.inc"
#include "qattn/Dialect/QAttn/IR/QAttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "qattn/Dialect/QAttn/IR/QAttnAttrs.cpp.inc"

void QAttnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "qattn/Dialect/QAttn/IR/QAttnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "qattn/Dialect/QAttn/IR/QAttnOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Stage1Attr
//===----------------------------------------------------------------------===//

LogicalResult Stage1Attr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t block, ScaleType, Granularity) {
  if (block <= 0)
    return emitError() << "expected a positive stage-1 block size, got "
                       << block;
  return success();
}

FloatType Stage1Attr::getScaleElementType() const {
  MLIRContext *ctx = getContext();
  if (getScale() == ScaleType::f16)
    return Float16Type::get(ctx);
  return Float32Type::get(ctx);
}

SmallVector<int64_t> Stage1Attr::getScaleShape(ArrayRef<int64_t> dataShape) const {
  int64_t tokens = dataShape[2];
  int64_t blocks = ShapedType::isDynamic(tokens)
                       ? ShapedType::kDynamic
                       : llvm::divideCeilSigned(tokens, getBlock());
  SmallVector<int64_t> shape = {dataShape[0], dataShape[1], blocks};
  if (getGranularity() == Granularity::channel)
    shape.push_back(dataShape[3]);
  return shape;
}

//===----------------------------------------------------------------------===//
// Stage2Attr
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> mlir::qattn::parseBitList(AsmParser &parser) {
  SmallVector<int64_t> bits;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parser.parseInteger(bits.emplace_back());
      }))
    return failure();
  return bits;
}

void mlir::qattn::printBitList(AsmPrinter &printer, ArrayRef<int64_t> bits) {
  printer << '[';
  llvm::interleaveComma(bits, printer);
  printer << ']';
}

LogicalResult Stage2Attr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> bits, int64_t group,
                                 PackOrder, Stage2Anchor) {
  if (bits.empty())
    return emitError() << "expected at least one stage-2 bit width";
  for (int64_t b : bits)
    if (b < 2 || b > 4)
      return emitError() << "expected stage-2 bit widths in {2, 3, 4}, got "
                         << b;
  if (group <= 0)
    return emitError() << "expected a positive stage-2 group size, got "
                       << group;
  return success();
}

int64_t Stage2Attr::getBitsOfHead(int64_t h) const {
  ArrayRef<int64_t> bits = getBits();
  return bits.size() == 1 ? bits.front() : bits[h];
}

bool Stage2Attr::fitsHeads(int64_t numHeads) const {
  return getBits().size() == 1 ||
         static_cast<int64_t>(getBits().size()) == numHeads;
}

int64_t Stage2Attr::getHeadByteOffset(int64_t h, int64_t headDim) const {
  int64_t bitsBefore = 0;
  for (int64_t i = 0; i < h; ++i)
    bitsBefore += getBitsOfHead(i);
  return headDim * bitsBefore / 8;
}

int64_t Stage2Attr::getRowBytes(int64_t numHeads, int64_t headDim) const {
  return getHeadByteOffset(numHeads, headDim);
}

//===----------------------------------------------------------------------===//
// GpuTilingAttr
//===----------------------------------------------------------------------===//

LogicalResult
GpuTilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t warps, int64_t splits, int64_t keysPerStep,
                      GpuKernel kernel, int64_t stages, PvOperands pv,
                      TileProducer producer) {
  // A CTA holds at most 1024 threads.
  if (warps < 1 || warps > 32)
    return emitError() << "expected 1 to 32 warps per CTA, got " << warps;
  if (splits < 1)
    return emitError() << "expected at least one key split, got " << splits;
  // Each key in flight holds its dequantized values in registers.
  if (keysPerStep < 1 || keysPerStep > 32)
    return emitError() << "expected 1 to 32 keys per step, got "
                       << keysPerStep;
  // The warp kernel pipelines its key stream two steps deep (registers), the
  // decode and prefill tensor-core kernels up to four (shared-memory rings).
  // The wgmma prefill kernel's CTA is 1 to 4 warpgroups sharing one ring.
  if (kernel == GpuKernel::wgmma && (warps % 4 != 0 || warps > 16))
    return emitError() << "expected whole warpgroups (4, 8, 12 or 16 warps) "
                          "for the wgmma kernel, got "
                       << warps;
  if (pv != PvOperands::f16 && kernel != GpuKernel::wgmma)
    return emitError() << "expected kernel = wgmma for pv = "
                       << stringifyPvOperands(pv) << ", got kernel = "
                       << stringifyGpuKernel(kernel);
  // The register split (setmaxnreg) is sized for two computing warpgroups,
  // and only the overlapped loop (3+ stages) uses their registers.
  if (producer != TileProducer::none &&
      (kernel != GpuKernel::wgmma || warps != 8 || stages < 3))
    return emitError() << "expected kernel = wgmma, 8 warps and 3 or 4 "
                          "stages for producer = "
                       << stringifyTileProducer(producer)
                       << ", got kernel = " << stringifyGpuKernel(kernel)
                       << ", " << warps << " warps and " << stages << " stages";
  int64_t maxStages = kernel == GpuKernel::rows ? 2 : 4;
  if (stages < 1 || stages > maxStages)
    return emitError() << "expected 1 to " << maxStages << " stages for the "
                       << stringifyGpuKernel(kernel) << " kernel, got "
                       << stages;
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxAttr
//===----------------------------------------------------------------------===//

// The SAS LUT covers integer parts down to the threshold; keep it small.
static constexpr double kMinSasThreshold = -32.0;
static constexpr int64_t kMaxSasDegree = 6;

/// Shortest readable form of a threshold for diagnostics.
static std::string formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

LogicalResult SoftmaxAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  SoftmaxMode mode, APFloat thresholdValue,
                                  int64_t degree) {
  double threshold = thresholdValue.convertToDouble();
  if (mode == SoftmaxMode::exact)
    return success();
  if (!(threshold < 0.0 && threshold >= kMinSasThreshold))
    return emitError() << "expected a SAS threshold in ["
                       << formatNumber(kMinSasThreshold) << ", 0), got "
                       << formatNumber(threshold);
  if (degree < 1 || degree > kMaxSasDegree)
    return emitError() << "expected a SAS polynomial degree in [1, "
                       << kMaxSasDegree << "], got " << degree;
  return success();
}

// #qattn.softmax<exact> | #qattn.softmax<sas[, threshold = F][, degree = N]>
Attribute SoftmaxAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<SoftmaxMode> mode = symbolizeSoftmaxMode(keyword);
  if (!mode) {
    parser.emitError(loc) << "expected softmax mode 'exact' or 'sas', got '"
                          << keyword << "'";
    return {};
  }
  double threshold = -6.0;
  int64_t degree = 2;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "threshold") {
      if (parser.parseFloat(threshold))
        return {};
    } else if (key == "degree") {
      if (parser.parseInteger(degree))
        return {};
    } else {
      parser.emitError(parser.getCurrentLocation())
          << "unknown softmax parameter '" << key << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<SoftmaxAttr>(loc, parser.getContext(), *mode,
                                        APFloat(threshold), degree);
}

void SoftmaxAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifySoftmaxMode(getMode());
  if (getMode() == SoftmaxMode::sas)
  {
    printer << ", threshold = ";
    printer.printFloat(getThreshold());
    printer << ", degree = " << getDegree();
  }
  printer << '>';
}
