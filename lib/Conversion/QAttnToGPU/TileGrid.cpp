//===- TileGrid.cpp - a decode grid of the tile layer as a kernel ---------===//
//
// Part of the qattn project.
//
// The scf.forall that qattn-tile writes over (batch, KV head, row tile, key
// split) becomes a kernel of one warp per grid point (its mapping's linear
// block dims 0 and 1 on grid x, 2 on y, 3 on z), and the
// qattn.combine_splits of its results a second kernel. The host passes every
// tensor as a flat buffer and each dynamic size as an i32; the kernel's body
// is the grid body, rewritten op by op (TileBody.cpp), once per distinct pair
// of K and V code widths of the KV heads.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "qattn/Conversion/LoweringUtils.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::kernels;
using namespace mlir::qattn::tiles;

//===----------------------------------------------------------------------===//
// Outlining
//===----------------------------------------------------------------------===//

namespace {
/// The static size of a kernel's flat view of a tensor: any buffer fits.
constexpr int64_t kFlatElements = int64_t(1) << 40;

/// A tensor passed to a kernel: its flat buffer and i32 dynamic sizes.
struct KernelTensor {
  RankedTensorType type;
  Value flat;
  SmallVector<Value> dynamicSizes;
};

/// The host side of a kernel launch: its arguments, in order (the tensors,
/// then index scalars as i32).
struct LaunchArgs {
  SmallVector<KernelTensor> tensors;
  SmallVector<Value> scalars;

  void add(ImplicitLocOpBuilder &b, Value buffer, RankedTensorType type,
           ValueRange sizes) {
    // A view of the buffer as 2^40 elements: kernel parameters are bare
    // pointers, which upstream's lowering makes only for static shapes;
    // the kernel indexes it with the sizes passed beside it.
    auto flatType = MemRefType::get({kFlatElements}, type.getElementType());
    KernelTensor k{type,
                   memref::ReinterpretCastOp::create(
                       b, flatType, buffer, /*offset=*/0,
                       ArrayRef<int64_t>{kFlatElements}, ArrayRef<int64_t>{1}),
                   {}};
    for (auto [i, size] : llvm::enumerate(type.getShape()))
      if (ShapedType::isDynamic(size))
        k.dynamicSizes.push_back(
            arith::IndexCastOp::create(b, b.getI32Type(), sizes[i]));
    tensors.push_back(std::move(k));
  }
  SmallVector<Value> operands() const {
    SmallVector<Value> out;
    for (const KernelTensor &k : tensors) {
      out.push_back(k.flat);
      out.append(k.dynamicSizes);
    }
    out.append(scalars);
    return out;
  }
};
} // namespace

/// The sizes of `tensor` on the host (tensor.dim where dynamic).
static SmallVector<Value> hostSizes(ImplicitLocOpBuilder &b, Value tensor) {
  SmallVector<Value> sizes;
  auto type = cast<RankedTensorType>(tensor.getType());
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    sizes.push_back(ShapedType::isDynamic(size)
                        ? tensor::DimOp::create(b, tensor, i).getResult()
                        : indexConst(b, size));
  return sizes;
}

/// Creates kernel `name` in `kernels` taking `args` (flat buffers and their
/// i32 sizes), for blocks of `warps` warps; its body is an empty gpu.return.
static gpu::GPUFuncOp createKernel(gpu::GPUModuleOp kernels, Location loc,
                                   StringRef name, const LaunchArgs &args,
                                   int64_t warps = 1) {
  OpBuilder mb = OpBuilder::atBlockEnd(kernels.getBody());
  auto type = FunctionType::get(kernels.getContext(),
                                ValueRange(args.operands()).getTypes(), {});
  auto kernel = gpu::GPUFuncOp::create(mb, loc, name, type);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  kernel.setKnownBlockSizeAttr(
      mb.getDenseI32ArrayAttr({int32_t(warps * kThreadsPerWarp), 1, 1}));
  SymbolTable(kernels).insert(kernel);
  OpBuilder kb = OpBuilder::atBlockBegin(&kernel.front());
  gpu::ReturnOp::create(kb, loc);
  return kernel;
}

/// The kernel's view of the tensors of `args`: its arguments, sizes as index.
static SmallVector<FlatTensor> kernelTensors(ImplicitLocOpBuilder &b,
                                             gpu::GPUFuncOp kernel,
                                             const LaunchArgs &args) {
  SmallVector<FlatTensor> out;
  unsigned at = 0;
  for (const KernelTensor &k : args.tensors) {
    FlatTensor f{kernel.getArgument(at++), {}};
    for (int64_t size : k.type.getShape())
      f.sizes.push_back(ShapedType::isDynamic(size)
                            ? arith::IndexCastOp::create(
                                  b, b.getIndexType(), kernel.getArgument(at++))
                                  .getResult()
                            : indexConst(b, size));
    out.push_back(std::move(f));
  }
  return out;
}

static gpu::LaunchFuncOp launch(ImplicitLocOpBuilder &b, gpu::GPUFuncOp kernel,
                                gpu::KernelDim3 grid, const LaunchArgs &args,
                                int64_t warps = 1) {
  Value one = indexConst(b, 1);
  return gpu::LaunchFuncOp::create(
      b, kernel, grid, {indexConst(b, warps * kThreadsPerWarp), one, one},
      /*dynamicSharedMemorySize=*/Value(), args.operands());
}

/// The grid's one user, the combine of its partial rows (max, sum and
/// accumulators: its results 0, 1, 2); null if it has another.
static CombineSplitsOp combineOf(scf::ForallOp grid) {
  if (grid.getNumResults() != 3 || grid->use_empty())
    return {};
  auto combine = dyn_cast<CombineSplitsOp>(*grid->getUsers().begin());
  if (!combine || combine.getMax() != grid.getResult(0) ||
      combine.getSum() != grid.getResult(1) ||
      combine.getAcc() != grid.getResult(2) ||
      !llvm::all_of(grid->getUsers(),
                    [&](Operation *user) { return user == combine; }))
    return {};
  return combine;
}

/// The grid's first K/V tile load (in a key loop, or a pipelined loop's
/// prologue), or null.
static LoadKVTileOp firstKVLoad(scf::ForallOp grid) {
  LoadKVTileOp first;
  grid.getBody()->walk([&](LoadKVTileOp load) {
    first = load;
    return WalkResult::interrupt();
  });
  return first;
}

/// The (K, V) stage-2 code widths of each KV head of `grid` (0 for a side
/// without stage-2 tiles); one entry where no side has per-head widths.
static SmallVector<std::pair<int64_t, int64_t>> headWidths(scf::ForallOp grid) {
  Stage2Attr k, v;
  grid.getBody()->walk([&](LoadKVTileOp load) {
    if (Stage2Attr s2 = load.getStage2Attr())
      (load.getLayout() == FragmentLayout::mma_keys_a ? k : v) = s2;
  });
  auto widthsOf = [](Stage2Attr s2) -> size_t {
    return s2 ? s2.getBits().size() : 1;
  };
  auto bitsOf = [](Stage2Attr s2, int64_t h) -> int64_t {
    return s2 ? s2.getBitsOfHead(h) : 0;
  };
  SmallVector<std::pair<int64_t, int64_t>> heads;
  for (size_t h = 0, e = std::max(widthsOf(k), widthsOf(v)); h < e; ++h)
    heads.push_back({bitsOf(k, h), bitsOf(v, h)});
  return heads;
}

/// Lowers the grid body and its stores for KV heads of code widths
/// `widths` (K, V).
static LogicalResult lowerProgram(WarpProgram &w, scf::ForallOp grid,
                                  std::pair<int64_t, int64_t> widths) {
  std::tie(w.keyBits, w.valueBits) = widths;
  w.channels =
      laneChannelsOf(grid, w.headDim, w.regBits(true), w.regBits(false));
  if (failed(lowerGridBody(w, *grid.getBody())))
    return failure();
  for (Operation &op : grid.getTerminator().getYieldingOps())
    storeRows(w, cast<tensor::ParallelInsertSliceOp>(op));
  return success();
}

/// Lowers the grid body once per distinct pair of K and V code widths of the
/// KV heads (the codes' layout, lane channel orders and dequantization
/// differ by width), in an scf.index_switch on the CTA's KV head class: a
/// CTA serves one KV head, so the branch is uniform.
static LogicalResult lowerPrograms(WarpProgram &w, scf::ForallOp grid) {
  SmallVector<std::pair<int64_t, int64_t>> heads = headWidths(grid), classes;
  SmallVector<int64_t> classOf;
  for (std::pair<int64_t, int64_t> widths : heads) {
    const auto *at = llvm::find(classes, widths);
    classOf.push_back(at - classes.begin());
    if (at == classes.end())
      classes.push_back(widths);
  }
  if (classes.size() == 1)
    return lowerProgram(w, grid, classes.front());
  ImplicitLocOpBuilder &b = w.b;
  Value hk = w.scalar(grid.getInductionVars()[1]);
  Value headClass = w.idx(0);
  for (auto [h, c] : llvm::enumerate(classOf))
    if (c)
      headClass = arith::SelectOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, hk, w.idx(h)),
          w.idx(c), headClass);
  SmallVector<int64_t> cases =
      llvm::to_vector(llvm::seq<int64_t>(1, classes.size()));
  auto classSwitch = scf::IndexSwitchOp::create(b, TypeRange(), headClass,
                                                cases, cases.size());
  OpBuilder::InsertionGuard guard(b);
  for (auto [c, region] : llvm::enumerate(llvm::concat<Region>(
           MutableArrayRef<Region>(classSwitch.getDefaultRegion()),
           classSwitch.getCaseRegions()))) {
    b.setInsertionPointToStart(&region.emplaceBlock());
    WarpProgram program = w; // the shared prologue's values, per class
    if (failed(lowerProgram(program, grid, classes[c])))
      return failure();
    scf::YieldOp::create(b);
  }
  return success();
}

/// Which induction variable of `grid` each linear block dimension of its
/// mapping (#gpu.block<linear_dim_k>, k = 0 fastest) is. The fastest one
/// must have a bound the kernel knows: a constant or the split count.
static FailureOr<std::array<int64_t, 4>> linearBlockDims(scf::ForallOp grid) {
  std::array<int64_t, 4> dimOf = {-1, -1, -1, -1};
  std::optional<ArrayAttr> mapping = grid.getMapping();
  ArrayRef<Attribute> dims =
      mapping ? mapping->getValue() : ArrayRef<Attribute>();
  for (auto [i, attr] : llvm::enumerate(dims)) {
    auto block = dyn_cast<gpu::GPUBlockMappingAttr>(attr);
    if (!block || !block.isLinearMapping())
      break;
    int64_t linear = block.getRelativeIndex();
    if (linear < 4 && dimOf[linear] < 0)
      dimOf[linear] = i;
  }
  if (llvm::is_contained(dimOf, -1))
    return grid.emitOpError("needs a mapping of its four dimensions to "
                            "#gpu.block<linear_dim_0> .. <linear_dim_3>");
  OpFoldResult fast = grid.getMixedUpperBound()[dimOf[0]];
  if (!getConstantIntValue(fast) && dimOf[0] != 3)
    return grid.emitOpError("maps a dimension of dynamic size other than the "
                            "split to linear_dim_0");
  return dimOf;
}

/// The combine kernel of `combine` over the grid's partial rows (acc, max,
/// sum: the grid's outputs 2, 0, 1, `splits` of them a row) and its launch,
/// early after `gridKernel`'s; returns the output buffer.
static Value launchCombine(ImplicitLocOpBuilder &hb, CombineSplitsOp combine,
                           scf::ForallOp grid, Value splits,
                           ArrayRef<Value> partials, gpu::GPUModuleOp kernels,
                           StringRef prefix, gpu::GPUFuncOp gridKernel) {
  auto outType = cast<RankedTensorType>(combine.getResult().getType());
  Value batch = memref::DimOp::create(hb, partials[2], 0);
  SmallVector<Value> outSizes = {batch};
  for (int64_t size : outType.getShape().drop_front())
    outSizes.push_back(indexConst(hb, size));
  Value out = allocFor(hb, outType, outSizes);
  LaunchArgs combineArgs;
  // acc, max, sum: the grid's outputs 2, 0, 1.
  for (int64_t i : {2, 0, 1}) {
    Value init = grid.getOutputs()[i];
    combineArgs.add(hb, partials[i], cast<RankedTensorType>(init.getType()),
                    hostSizes(hb, init));
  }
  combineArgs.add(hb, out, outType, outSizes);
  // Balanced chunks: the lengths, from which the kernel finds each
  // sequence's.
  if (Value lens = combine.getKvLens())
    combineArgs.add(hb, toBuffer(hb, lens),
                    cast<RankedTensorType>(lens.getType()),
                    hostSizes(hb, lens));
  gpu::GPUFuncOp combineKernel =
      createKernel(kernels, combine.getLoc(), (prefix + "_combine_tiles").str(),
                   combineArgs, kCombineWarps);
  Value shared = combineKernel.addWorkgroupAttribution(
      MemRefType::get({kCombineSharedFloats}, hb.getF32Type(),
                      MemRefLayoutAttrInterface(),
                      gpu::AddressSpaceAttr::get(hb.getContext(),
                                                 gpu::AddressSpace::Workgroup)),
      combine.getLoc());
  // One CTA per SM is all it asks for: ptxas otherwise sizes the registers
  // for the most CTAs an SM takes and issues a split's loads only after the
  // last split's sums (see TileCombine.cpp).
  combineKernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                         hb.getI32IntegerAttr(1));
  {
    OpBuilder kb = OpBuilder::atBlockBegin(&combineKernel.front());
    ImplicitLocOpBuilder b(combine.getLoc(), kb);
    SmallVector<FlatTensor> tensors =
        kernelTensors(b, combineKernel, combineArgs);
    // An early launch: it waits here, after its argument arithmetic, for
    // the grid's partial rows.
    waitForEarlierLaunches(b);
    emitCombineKernel(b, combine, tensors, shared);
  }
  // A task: an output row's 32 channels.
  Value tasks = mul(hb, batch,
                    outType.getDimSize(1) * outType.getDimSize(2) *
                        combineChunksPerRow(outType.getDimSize(3)));
  Value warps =
      arith::MulIOp::create(hb, tasks, combineWarpsPerTask(hb, splits));
  Value ctas =
      arith::CeilDivUIOp::create(hb, warps, indexConst(hb, kCombineWarps));
  markEarlyLaunch(launch(hb, combineKernel,
                         {ctas, indexConst(hb, 1), indexConst(hb, 1)},
                         combineArgs, kCombineWarps),
                  gridKernel);
  return out;
}

static LogicalResult lowerGrid(scf::ForallOp grid, gpu::GPUModuleOp kernels,
                               StringRef prefix, const ChipInfo &chip) {
  CombineSplitsOp combine = combineOf(grid);
  LoadKVTileOp kvLoad = firstKVLoad(grid);
  if (!combine || grid.getRank() != 4 || !kvLoad)
    return grid.emitOpError(
        "is not a decode grid of qattn-tile (batch, KV head, row tile and "
        "split, loading K/V tiles, with max, sum and accumulator results "
        "combined by qattn.combine_splits)");
  // A split count computed at run time is the partial rows' dimension 3,
  // which the kernel takes as an i32 beside them; the body may read it.
  Value splitBound = dyn_cast<Value>(grid.getMixedUpperBound()[3]);
  if (failed(checkLowerable(grid)))
    return failure();
  FailureOr<std::array<int64_t, 4>> blockDims = linearBlockDims(grid);
  if (failed(blockDims))
    return failure();
  const std::array<int64_t, 4> &dimOf = *blockDims;
  LoadQueryTileOp queryLoad =
      *grid.getBody()->getOps<LoadQueryTileOp>().begin();
  auto queryType = cast<RankedTensorType>(queryLoad.getQ().getType());
  int64_t headDim = queryType.getDimSize(3);
  int64_t pairs = queryLoad.getGroup() * queryType.getDimSize(2);
  int64_t rowBlocks = tileGridRowBlocks(pairs);

  SetVector<Value> captured;
  getUsedValuesDefinedAbove(grid.getRegion(), captured);
  ImplicitLocOpBuilder hb(grid.getLoc(), grid);
  LaunchArgs args;
  SmallVector<Value> tensors, scalars, constants;
  for (Value v : captured) {
    if (v == splitBound)
      continue;
    if (v.getDefiningOp<arith::ConstantOp>()) {
      constants.push_back(v);
    } else if (isa<RankedTensorType>(v.getType())) {
      args.add(hb, toBuffer(hb, v), cast<RankedTensorType>(v.getType()),
               hostSizes(hb, v));
      tensors.push_back(v);
    } else if (v.getType().isIndex()) {
      // A size the host computed (such as the balanced chunks' count,
      // which canonicalization may hoist out of the body).
      args.scalars.push_back(
          arith::IndexCastOp::create(hb, hb.getI32Type(), v));
      scalars.push_back(v);
    } else {
      return grid.emitOpError("reads ")
             << v
             << " from outside, which its kernel cannot take (only "
                "tensors, index sizes and constants)";
    }
  }
  // The partial rows: fresh buffers shaped like the grid's outputs.
  SmallVector<Value> partials;
  for (Value init : grid.getOutputs()) {
    auto type = cast<RankedTensorType>(init.getType());
    SmallVector<Value> sizes = hostSizes(hb, init);
    partials.push_back(allocFor(hb, type, sizes));
    args.add(hb, partials.back(), type, sizes);
  }

  gpu::GPUFuncOp kernel = createKernel(kernels, grid.getLoc(),
                                       (prefix + "_decode_tiles").str(), args);
  // The occupancy qattn-tile sized the splits by: the grid's, else the
  // budget's (qattn/Target/Chip.h).
  int64_t warpsPerSM =
      tileGridWarpsPerSM(chip, kvLoad.getKeys(), rowBlocks, headDim);
  if (auto attr = grid->getAttrOfType<IntegerAttr>(kGridWarpsPerSMAttr))
    warpsPerSM = attr.getInt();
  kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  hb.getI32IntegerAttr(warpsPerSM));
  {
    OpBuilder kb = OpBuilder::atBlockBegin(&kernel.front());
    ImplicitLocOpBuilder b(grid.getLoc(), kb);
    WarpProgram w(b, headDim, rowBlocks, LaneChannels());
    w.rows = pairs;
    // The pipelined loops' shared-memory ring, in the kernel's static shared
    // memory (one warp per CTA); without room, registers.
    if (int64_t ringBytes = planRing(w, grid);
        ringBytes && ringBytes <= chip.staticSharedBytes) {
      auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                  gpu::AddressSpace::Workgroup);
      w.ring = kernel.addWorkgroupAttribution(
          MemRefType::get({ringBytes / 4}, b.getI32Type(),
                          MemRefLayoutAttrInterface(), workgroup),
          grid.getLoc());
      // The slots lie on 128-byte lines (planRing).
      kernel.setWorkgroupAttributionAttr(0,
                                         LLVM::LLVMDialect::getAlignAttrName(),
                                         b.getI64IntegerAttr(kRingLineBytes));
    } else {
      w.ringLoads.clear();
      w.ringLoadsPerStep.clear();
      w.keyConstants = w.valueConstants = -1;
    }
    SmallVector<FlatTensor> flat = kernelTensors(b, kernel, args);
    for (auto [v, f] : llvm::zip(tensors, flat))
      w.tensors[v] = f;
    // (The last arguments before the workgroup attributions.)
    unsigned inputs = kernel.getFunctionType().getNumInputs();
    for (auto [v, arg] :
         llvm::zip(scalars, kernel.getArguments().slice(inputs - scalars.size(),
                                                        scalars.size())))
      w.scalars.map(
          v, arith::IndexCastOp::create(b, b.getIndexType(), arg).getResult());
    for (auto [v, f] :
         llvm::zip(grid.getRegionIterArgs(), ArrayRef(flat).take_back(3)))
      w.tensors[v] = f;
    for (Value c : constants)
      if (failed(lowerGridConstant(w, c.getDefiningOp<arith::ConstantOp>())))
        return failure();
    Value splits = flat.back().sizes[3];
    if (splitBound)
      w.scalars.map(splitBound, splits);
    // Linear dims 0 (fastest) and 1 share grid x, 2 is y, 3 is z.
    Value x = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    // The fastest dim's size: a constant, or the split count.
    std::optional<int64_t> fastSize =
        getConstantIntValue(grid.getMixedUpperBound()[dimOf[0]]);
    Value fast = fastSize ? w.idx(*fastSize) : splits;
    // (A copy: the forall returns its induction variables by value.)
    SmallVector<Value> ivs = grid.getInductionVars();
    Value z = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    Value y = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    Value major = arith::DivUIOp::create(b, x, fast);
    Value minor = arith::RemUIOp::create(b, x, fast);
    w.scalars.map(ivs[dimOf[3]], z);
    w.scalars.map(ivs[dimOf[2]], y);
    w.scalars.map(ivs[dimOf[1]], major);
    w.scalars.map(ivs[dimOf[0]], minor);
    if (failed(lowerPrograms(w, grid)))
      return failure();
  }
  SmallVector<Value> ub = getValueOrCreateConstantIndexOp(
      hb, hb.getLoc(), grid.getMixedUpperBound());
  launch(hb, kernel,
         {arith::MulIOp::create(hb, ub[dimOf[1]], ub[dimOf[0]]), ub[dimOf[2]],
          ub[dimOf[3]]},
         args);

  auto outType = cast<RankedTensorType>(combine.getResult().getType());
  Value out = launchCombine(hb, combine, grid, ub[3], partials, kernels, prefix,
                            kernel);
  combine.replaceAllUsesWith(toTensor(hb, out, outType));
  combine.erase();
  SmallVector<Value> inits(grid.getOutputs());
  grid.erase();
  for (Value init : inits)
    if (init.use_empty())
      init.getDefiningOp()->erase();
  return success();
}

static bool isTileGrid(scf::ForallOp grid) {
  return !grid.getBody()->getOps<LoadQueryTileOp>().empty();
}

bool mlir::qattn::tiles::hasTileGrids(ModuleOp module) {
  return module
      .walk([](scf::ForallOp grid) {
        return isTileGrid(grid) ? WalkResult::interrupt()
                                : WalkResult::advance();
      })
      .wasInterrupted();
}

LogicalResult mlir::qattn::tiles::lowerTileGrids(ModuleOp module,
                                                 gpu::GPUModuleOp kernels,
                                                 const ChipInfo &chip) {
  SmallVector<scf::ForallOp> grids;
  module.walk([&](scf::ForallOp grid) {
    if (isTileGrid(grid))
      grids.push_back(grid);
  });
  for (scf::ForallOp grid : grids) {
    auto func = grid->getParentOfType<func::FuncOp>();
    if (failed(
            lowerGrid(grid, kernels, func ? func.getSymName() : "qattn", chip)))
      return failure();
  }
  return success();
}
