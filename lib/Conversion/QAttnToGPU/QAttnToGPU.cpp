//===- QAttnToGPU.cpp - qattn.attention as GPU kernels --------------------===//
//
// Part of the qattn project.
//
// The lowering of qattn.attention to GPU kernels and host launches: the pass,
// the kernel module, each kernel's launch and the index width of the
// kernels. The kernels: the tile layer's decode grids (TileGrid.cpp), the
// warp kernel on CUDA cores (RowsKernel.cpp) and the tensor-core prefill
// kernels (MmaKernel.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelCommon.h"
#include "TileLowering.h"

#include "qattn/Conversion/Passes.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNCONVERTTOGPU
#include "qattn/Conversion/Passes.h.inc"
} // namespace mlir::qattn

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::format;
using namespace mlir::qattn::kernels;

static constexpr StringLiteral kKernelModuleName = "qattn_kernels";

//===----------------------------------------------------------------------===//
// Kernel creation and the host side
//===----------------------------------------------------------------------===//

static FailureOr<AttentionShape> getShape(AttentionOp op,
                                          const ChipInfo &chip) {
  // qattn-tile turns these into the tile layer; only a hand-written tiling
  // attribute reaches here.
  if (op.isShapeGeneric())
    return op.emitOpError("with per-sequence lengths, a page table or dynamic "
                          "sizes has no GPU kernel (qattn-tile puts it on the "
                          "tile layer)");
  if (op.getBatch() < 1)
    return op.emitOpError() << "expected a batch of at least 1 for the GPU "
                               "kernels, got "
                            << op.getBatch();
  GpuTilingAttr tiling = op.getGpuTilingAttr();
  if (!tiling)
    return op.emitOpError("has no #qattn.gpu_tiling: run qattn-tile first");
  if (op.getSoftmaxOrDefault().getMode() != SoftmaxMode::exact &&
      (tiling.getSplits() != 1 || tiling.getKernel() != GpuKernel::rows))
    return op.emitOpError("SAS softmax on the GPU needs the warp kernel "
                          "with one key split (its terms are defined "
                          "against the row's final max)");
  if (op.getHeadDim() % kThreadsPerWarp != 0)
    return op.emitOpError() << "expected a head dimension that is a multiple of "
                            << kThreadsPerWarp << " on the GPU, got "
                            << op.getHeadDim();
  return AttentionShape{op.getBatch(),
                        op.getNumQueryHeads(),
                        op.getNumKVHeads(),
                        op.getNumQueries(),
                        op.getNumCacheKeys(),
                        op.getNumBufferKeys(),
                        op.getHeadDim(),
                        tiling.getWarps(),
                        tiling.getSplits(),
                        tiling.getKeysPerStep(),
                        tiling.getStages(),
                        op.getCausal(),
                        op.getSoftmaxScale(),
                        tiling.getKernel() == GpuKernel::wgmma,
                        tiling.getPv() == PvOperands::e4m3,
                        tiling.getProducer() == TileProducer::warpgroup,
                        chip};
}

static gpu::KernelDim3 dims(ImplicitLocOpBuilder &b, int64_t x, int64_t y) {
  return {indexConst(b, x), indexConst(b, y), indexConst(b, 1)};
}

/// Adds kernel `name` over `args` to `module`, its body emitted by `body`,
/// and launches it from `b` on `grid` CTAs of `threads` threads with
/// `sharedBytes` of dynamic shared memory. An `early` launch may start
/// while the previous one runs (markEarlyLaunch): `body` must wait
/// (waitForEarlierLaunches) before it reads what that one writes.
static void
launchKernel(ImplicitLocOpBuilder &b, gpu::GPUModuleOp module, StringRef name,
             ArrayRef<Value> args, std::pair<int64_t, int64_t> grid,
             int64_t threads,
             function_ref<void(ImplicitLocOpBuilder &, gpu::GPUFuncOp)> body,
             int64_t sharedBytes = 0, bool early = false) {
  Location loc = b.getLoc();
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto type = FunctionType::get(module.getContext(), ValueRange(args).getTypes(), {});
  auto kernel = gpu::GPUFuncOp::create(mb, loc, name, type);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  kernel.setKnownBlockSizeAttr(
      mb.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  SymbolTable(module).insert(kernel); // uniquifies the name
  OpBuilder kb = OpBuilder::atBlockBegin(&kernel.front());
  gpu::ReturnOp::create(kb, loc);
  kb.setInsertionPointToStart(&kernel.front());
  ImplicitLocOpBuilder k(loc, kb);
  body(k, kernel);
  Value shared;
  if (sharedBytes)
    shared = arith::ConstantIntOp::create(b, b.getI32Type(), sharedBytes);
  auto launch =
      gpu::LaunchFuncOp::create(b, kernel, dims(b, grid.first, grid.second),
                                dims(b, threads, 1), shared, args);
  if (!early)
    return;
  Operation *prev = launch->getPrevNode();
  while (prev && !isa<gpu::LaunchFuncOp>(prev))
    prev = prev->getPrevNode();
  assert(prev && "an early launch follows another launch");
  markEarlyLaunch(launch, module.lookupSymbol<gpu::GPUFuncOp>(
                              cast<gpu::LaunchFuncOp>(prev).getKernelName()));
}

static gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module) {
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
    return existing;
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  return gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModuleName);
}

/// The tensor-core prefill kernel: a stage launch decodes K and V into
/// scratch once, the attention launch writes the output.
static LogicalResult lowerMmaAttention(AttentionOp op, gpu::GPUModuleOp kernels,
                                       StringRef prefix,
                                       const AttentionShape &shape,
                                       ArrayRef<Value> operands, Value out) {
  int64_t d = shape.headDim;
  // qattn-tile only picks the kernel where it applies; these guard
  // hand-written tilings.
  std::string why = op.whyNotMmaKernel();
  if (why.empty() && shape.splits != 1)
    why = "expected splits = 1, got " + std::to_string(shape.splits);
  // At d = 64 the serial tile loop gave wrong results on the H200 for every
  // CTA with more than one key tile, not yet understood; the overlapped loop
  // (one warpgroup, 3+ stages) passes (docs/PERF.md).
  if (why.empty() && shape.wgmma && d != 128 && !overlapsTiles(shape))
    why = "expected d = 128, or one warpgroup and 3 or more stages at d = " +
          std::to_string(d) + ", got " + std::to_string(shape.warps) +
          " warps and " + std::to_string(shape.stages) + " stages";
  if (why.empty() && shape.e4m3Pv) {
    why = op.whyNotE4m3PV();
    if (!why.empty())
      why = "pv = e4m3: " + why;
  }
  StringRef kind = shape.wgmma ? "wgmma" : "mma";
  if (!why.empty())
    return op.emitOpError() << "tensor-core prefill kernel (kernel = " << kind
                            << "): " << why;
  int64_t sharedBytes = mmaSharedBytes(shape);
  if (sharedBytes > shape.chip.maxSharedBytesPerCta)
    return op.emitOpError() << "tensor-core prefill kernel: " << shape.stages
                            << " stages need " << sharedBytes
                            << " bytes of shared memory, more than "
                            << shape.chip.maxSharedBytesPerCta
                            << "; use fewer stages";
  OpBuilder builder(op);
  ImplicitLocOpBuilder b(op.getLoc(), builder);
  RankedTensorType outType = op.getResult().getType();
  int64_t keys = mmaStagedKeys(shape);
  SmallVector<int64_t> kvShape = {shape.batch, shape.kvHeads, keys, d};
  SmallVector<Value> scratch = {
      memref::AllocOp::create(b, MemRefType::get(kvShape, b.getI8Type())),
      memref::AllocOp::create(
          b, MemRefType::get(mmaStagedVShape(shape),
                             shape.e4m3Pv ? Type(b.getI8Type()) : b.getF16Type())),
      memref::AllocOp::create(
          b, MemRefType::get({shape.batch, shape.kvHeads, keys}, b.getF32Type()))};

  SmallVector<Value> stageArgs(operands);
  stageArgs.append(scratch);
  auto [stageBlocks, stageThreads] = mmaStageLaunch(shape);
  launchKernel(b, kernels, (prefix + "_prefill_stage").str(), stageArgs,
               {stageBlocks, 1}, stageThreads,
               [&](ImplicitLocOpBuilder &k, gpu::GPUFuncOp kernel) {
                 ValueRange a = kernel.getArguments().take_back(3);
                 emitMmaStage(k, shape, viewOperands(op, kernel.getArguments()),
                              MmaStaged{a[0], a[1], a[2]});
               });

  SmallVector<Value> args(stageArgs);
  args.push_back(out);
  // The fp8 kernel's name says so (checks widen their tolerance by it).
  launchKernel(
      b, kernels,
      (prefix + "_attention_" + kind + (shape.e4m3Pv ? "_e4m3" : "")).str(),
      args, mmaGrid(shape), shape.threads(),
      [&](ImplicitLocOpBuilder &k, gpu::GPUFuncOp kernel) {
        if (int64_t ctas = mmaMinCtasPerSM(shape))
          kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                          k.getI32IntegerAttr(ctas));
        ValueRange a = kernel.getArguments().take_back(4);
        emitMmaAttention(k, shape, viewOperands(op, kernel.getArguments()),
                         MmaStaged{a[0], a[1], a[2]}, outType.getElementType(),
                         a[3]);
      },
      sharedBytes, /*early=*/true);
  op.replaceAllUsesWith(toTensor(b, out, outType));
  op.erase();
  return success();
}

static LogicalResult lowerAttention(AttentionOp op, const AttentionShape &shape,
                                    gpu::GPUModuleOp kernels,
                                    StringRef prefix) {
  OpBuilder builder(op);
  ImplicitLocOpBuilder b(op.getLoc(), builder);
  RankedTensorType outType = op.getResult().getType();

  // Host: operand buffers, the output, and scratch for split partials.
  SmallVector<Value> operands;
  for (Value v : op->getOperands())
    operands.push_back(toBuffer(b, v));
  Value out = allocFor(b, outType);
  SmallVector<Value> outputs = {out};
  if (shape.splits > 1) {
    int64_t rows = shape.rows(), splits = shape.splits;
    outputs = {
        memref::AllocOp::create(
            b, MemRefType::get({rows, splits, shape.headDim}, b.getF32Type())),
        memref::AllocOp::create(
            b, MemRefType::get({rows, splits, 2}, b.getF32Type()))};
  }

  if (op.getGpuTilingAttr().getKernel() == GpuKernel::mma || shape.wgmma)
    return lowerMmaAttention(op, kernels, prefix, shape, operands, out);
  SmallVector<Value> mainArgs(operands);
  mainArgs.append(outputs);
  launchKernel(b, kernels, (prefix + "_attention").str(), mainArgs,
               {shape.splits, shape.taskCtas()}, shape.threads(),
               [&](ImplicitLocOpBuilder &k, gpu::GPUFuncOp kernel) {
                 AttentionView view = viewOperands(op, kernel.getArguments());
                 ValueRange kernelOutputs =
                     kernel.getArguments().take_back(outputs.size());
                 emitRowsAttention(k, shape, view, outType.getElementType(),
                                   op.getSoftmaxOrDefault(), kernelOutputs);
               });

  if (shape.splits > 1) {
    SmallVector<Value> combineArgs = {outputs[0], outputs[1], out};
    launchKernel(
        b, kernels, (prefix + "_combine").str(), combineArgs, {shape.rows(), 1},
        shape.combineWarps() * kThreadsPerWarp,
        [&](ImplicitLocOpBuilder &k, gpu::GPUFuncOp kernel) {
          // Everything it reads is the partials.
          waitForEarlierLaunches(k);
          emitRowsCombine(k, shape, outType.getElementType(),
                          op.getSoftmaxOrDefault(), kernel);
        },
        /*sharedBytes=*/0, /*early=*/true);
  }
  op.replaceAllUsesWith(toTensor(b, out, outType));
  op.erase();
  return success();
}

/// Where 32-bit indices paid on the H200 (same call, bit-identical
/// outputs; docs/PERF.md): the warpgroup prefill kernel with e4m3 P.V (B4
/// N4K 1416 -> 1409, causal 856 -> 825, B1 N16K causal 2932 -> 2881: no
/// spill left at 128 registers) and at d = 64 (B16 N1K 184.9 -> 179.4).
/// With f16 P.V at d = 128 ptxas scheduled the narrower code worse (B4 N4K
/// 1607 -> 1636, causal one warpgroup 974 -> 989): 64 bits there.
static bool prefersNarrowIndices(AttentionOp op, const AttentionShape &shape) {
  return shape.wgmma && (shape.e4m3Pv || shape.headDim == 64);
}

/// Gives the kernels 32-bit index arithmetic (the gpu.module's data layout,
/// which convert-gpu-to-nvvm follows) where that is exact: every memref in
/// them has a static shape of fewer than 2^31 bytes, so no linearized index
/// and no byte offset into it overflows. Halves the registers of indices and
/// loop counters and the instructions of their arithmetic. Not where an nvgpu
/// op takes a memref: convert-nvgpu-to-nvvm lowers those with 64-bit indices
/// whatever the data layout says. Global addresses taken for inline PTX
/// (aligned pointer as index, widened to i64) would lose their upper half in a
/// 32-bit index, so they are read from the memref's descriptor instead.
static void narrowKernelIndices(gpu::GPUModuleOp kernels) {
  constexpr int64_t kIndexBits = 32;
  auto fits = [](Type type) {
    auto m = dyn_cast<MemRefType>(type);
    // Shared memory (dynamic or not) is below 2^31 bytes on any GPU.
    if (!m || gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(m))
      return true;
    if (!m.hasStaticShape() || !m.getElementType().isIntOrFloat())
      return false;
    int64_t bits = m.getElementType().getIntOrFloatBitWidth();
    return m.getNumElements() <
           std::min<int64_t>(int64_t(1) << 31, (int64_t(1) << 34) / bits);
  };
  WalkResult unsafe = kernels.walk([&](Operation *op) {
    if (isa_and_nonnull<nvgpu::NVGPUDialect>(op->getDialect()) &&
        llvm::any_of(op->getOperandTypes(), llvm::IsaPred<MemRefType>))
      return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        if (!llvm::all_of(block.getArgumentTypes(), fits))
          return WalkResult::interrupt();
    if (!llvm::all_of(op->getOperandTypes(), fits) ||
        !llvm::all_of(op->getResultTypes(), fits))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (unsafe.wasInterrupted())
    return;
  MLIRContext *ctx = kernels.getContext();
  auto i64 = IntegerType::get(ctx, 64);
  auto index = IntegerType::get(ctx, kIndexBits);
  SmallVector<memref::ExtractAlignedPointerAsIndexOp> globals;
  bool widened = true;
  kernels.walk([&](memref::ExtractAlignedPointerAsIndexOp op) {
    auto type = cast<MemRefType>(op.getSource().getType());
    if (type.getMemorySpace())
      return;
    globals.push_back(op);
    widened &= llvm::all_of(op->getUsers(), [&](Operation *user) {
      auto cast = dyn_cast<arith::IndexCastUIOp>(user);
      return cast && cast.getType() == i64;
    });
  });
  if (!widened)
    return;
  for (auto op : globals) {
    auto type = cast<MemRefType>(op.getSource().getType());
    ImplicitLocOpBuilder b(op.getLoc(), op);
    // The descriptor convert-gpu-to-nvvm builds for the memref: {allocated,
    // aligned, offset, sizes, strides}; the casts meet its own and fold.
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    SmallVector<Type> fields = {ptr, ptr, index};
    if (type.getRank() > 0) {
      auto array = LLVM::LLVMArrayType::get(index, type.getRank());
      fields.append({array, array});
    }
    Value desc =
        UnrealizedConversionCastOp::create(
            b, LLVM::LLVMStructType::getLiteral(ctx, fields), op.getSource())
            .getResult(0);
    Value aligned = LLVM::ExtractValueOp::create(b, desc, 1);
    Value address = LLVM::PtrToIntOp::create(b, i64, aligned);
    for (Operation *cast : llvm::make_early_inc_range(op->getUsers())) {
      cast->replaceAllUsesWith(ValueRange{address});
      cast->erase();
    }
    op.erase();
  }
  kernels->setAttr(
      DLTIDialect::kDataLayoutAttrName,
      DataLayoutSpecAttr::get(
          ctx, {DataLayoutEntryAttr::get(IndexType::get(ctx),
                                         IntegerAttr::get(i64, kIndexBits))}));
}

namespace {
struct QAttnConvertToGPUPass
    : qattn::impl::QAttnConvertToGPUBase<QAttnConvertToGPUPass> {
  using QAttnConvertToGPUBase::QAttnConvertToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<ChipInfo> info = lookupChip(chip);
    if (!info) {
      emitError(module.getLoc()) << "qattn-convert-to-gpu: unknown chip '" << chip
                         << "'; qattn has kernels for " << knownChips();
      return signalPassFailure();
    }
    // The decode grids of the tile layer, op by op (TileGrid.cpp).
    if (tiles::hasTileGrids(module) &&
        failed(tiles::lowerTileGrids(module, getOrCreateKernelModule(module),
                                     *info)))
      return signalPassFailure();
    WalkResult unsupported = module.walk([](Operation *op) {
      if (isa<LoadQueryTileOp, LoadKVTileOp, DequantizeTileOp, TileScoresOp,
              TileRowMaxOp, SoftmaxUpdateOp, WaitTilesOp, KeyChunkOp,
              CombineSplitsOp>(op)) {
        op->emitOpError("of the tile layer has no GPU lowering outside a "
                        "decode grid of qattn-tile");
        return WalkResult::interrupt();
      }
      if (isa<QAttnDialect>(op->getDialect()) && !isa<AttentionOp>(op)) {
        op->emitOpError("is not supported by the GPU lowering yet; quantize "
                        "on the host (the CPU artifact) and pass the "
                        "quantized tensors");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (unsupported.wasInterrupted())
      return signalPassFailure();

    SmallVector<AttentionOp> ops;
    module.walk([&](AttentionOp op) { ops.push_back(op); });
    if (ops.empty())
      return;
    gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
    bool narrow = true;
    for (AttentionOp op : ops) {
      FailureOr<AttentionShape> shape = getShape(op, *info);
      if (failed(shape))
        return signalPassFailure();
      narrow &= prefersNarrowIndices(op, *shape);
      auto func = op->getParentOfType<func::FuncOp>();
      StringRef prefix = func ? func.getSymName() : StringRef("qattn");
      if (failed(lowerAttention(op, *shape, kernels, prefix)))
        return signalPassFailure();
    }
    if (narrow)
      narrowKernelIndices(kernels);
  }
};
} // namespace
