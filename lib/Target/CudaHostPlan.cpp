//===- CudaHostPlan.cpp - a host function as manifest launches ------------===//
//
// Part of the qattn project.
//
// After the GPU pipeline a host function only computes sizes, allocates
// scratch buffers, takes views of buffers and launches kernels. Each launch
// becomes a manifest entry whose parameters name an argument, a result, a
// scratch buffer or a size symbol, and whose grid is a size expression
// (docs/ARTIFACT.md, "Symbolic sizes on target cuda"). A size that a buffer's
// shape or a parameter needs and that is an expression of the symbols (a
// split count computed from the batch) becomes a named size of the
// function's `sizes`, which the runtime evaluates at each call.
//
//===----------------------------------------------------------------------===//

#include "CudaHostPlan.h"
#include "SizeExpr.h"

#include "qattn/Conversion/Passes.h"
#include "qattn/Target/Artifact.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::qattn;
namespace json = llvm::json;

/// "[B, 8, 64]".
static std::string formatShape(const json::Array &shape) {
  std::string text;
  for (const json::Value &size : shape)
    text += (text.empty() ? "" : ", ") + formatSize(size);
  return "[" + text + "]";
}

/// The views that a kernel parameter may pass: the same address as the
/// buffer they view (a flat or reshaped memref, as kernels take them).
static bool isView(Operation *op) {
  return isa<memref::CollapseShapeOp, memref::ExpandShapeOp, memref::CastOp,
             memref::ReinterpretCastOp>(op);
}

/// The launch sizes that must be constants (the block: a kernel is compiled
/// for its block).
static FailureOr<json::Array> constantDims(gpu::LaunchFuncOp launch,
                                           gpu::KernelDim3 dims) {
  json::Array out;
  for (Value v : {dims.x, dims.y, dims.z}) {
    std::optional<int64_t> c = getConstantIntValue(v);
    if (!c)
      return launch.emitOpError("has a block size that is not a constant");
    out.push_back(*c);
  }
  return out;
}

namespace {
/// What a kernel parameter refers to, in manifest terms.
struct ParamRef {
  StringRef kind; // "arg", "result" or "buffer"
  int64_t index;
};

class HostPlanner {
public:
  HostPlanner(func::FuncOp host, unsigned numArgs,
              SmallVector<const json::Array *> shapes)
      : host(host), numArgs(numArgs), shapes(shapes), sizes(shapes) {}

  FailureOr<LaunchPlan> run();

private:
  LogicalResult planOp(Operation &op);
  LogicalResult planAlloc(memref::AllocOp alloc);
  LogicalResult planResultAlloc(memref::AllocOp alloc, memref::CopyOp copy,
                                const json::Array &shape);
  LogicalResult planView(Operation *view);
  LogicalResult planLaunch(gpu::LaunchFuncOp launch);
  FailureOr<json::Value> planParam(gpu::LaunchFuncOp launch, unsigned index,
                                   Value operand);
  FailureOr<json::Array> planGrid(gpu::LaunchFuncOp launch);
  FailureOr<json::Array> allocShape(memref::AllocOp alloc);
  memref::CopyOp findResultCopy(memref::AllocOp alloc);
  std::string nameSize(json::Value size);
  json::Value useNames(json::Value size) const;

  func::FuncOp host;
  unsigned numArgs;
  SmallVector<const json::Array *> shapes;
  SizeTracer sizes;
  DenseMap<Value, ParamRef> refs;
  /// The copies of result allocations into their out-params, which the
  /// launches make unnecessary: they write the result itself.
  DenseSet<Operation *> resultCopies;
  LaunchPlan plan;
};
} // namespace

FailureOr<LaunchPlan> HostPlanner::run() {
  for (BlockArgument arg : host.getArguments()) {
    unsigned i = arg.getArgNumber();
    refs[arg] = i < numArgs ? ParamRef{"arg", i} : ParamRef{"result", i - numArgs};
  }
  for (Operation &op : host.getBody().front())
    if (failed(planOp(op)))
      return failure();
  // A grid says S0*2 where S0 names its part.
  for (json::Value &launch : plan.launches)
    for (json::Value &size : *launch.getAsObject()->getArray("grid"))
      size = useNames(std::move(size));
  return std::move(plan);
}

/// The symbol that a named size of the function's `sizes` gives `size`: the
/// one it has, or a new one, "S0", "S1", ..., that no shape uses.
std::string HostPlanner::nameSize(json::Value size) {
  for (const json::Value &named : plan.sizes)
    if (*named.getAsObject()->get("size") == size)
      return named.getAsObject()->getString("name")->str();
  auto taken = [&](StringRef name) {
    for (const json::Array *shape : shapes)
      for (const json::Value &dim : *shape)
        if (dim.getAsString() == name)
          return true;
    return false;
  };
  std::string name;
  for (size_t i = plan.sizes.size(); name.empty() || taken(name); ++i)
    name = "S" + std::to_string(i);
  plan.sizes.push_back(json::Object{{"name", name}, {"size", std::move(size)}});
  return name;
}

/// `size` with every part that a named size computes replaced by its name.
json::Value HostPlanner::useNames(json::Value size) const {
  for (const json::Value &named : plan.sizes)
    if (*named.getAsObject()->get("size") == size)
      return *named.getAsObject()->get("name");
  if (json::Object *object = size.getAsObject())
    for (auto &member : *object)
      if (json::Array *operands = member.second.getAsArray())
        for (json::Value &operand : *operands)
          operand = useNames(std::move(operand));
  return size;
}

LogicalResult HostPlanner::planOp(Operation &op) {
  if (isSizeComputation(&op) || isa<func::ReturnOp, memref::DeallocOp>(op) ||
      resultCopies.contains(&op))
    return success();
  if (auto alloc = dyn_cast<memref::AllocOp>(op))
    return planAlloc(alloc);
  if (isView(&op))
    return planView(&op);
  if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op))
    return planLaunch(launch);
  if (isa<memref::CopyOp>(op))
    return op.emitOpError(
        "copies between buffers, which a cuda artifact's manifest cannot "
        "express (only a final copy of an allocation into a result, as "
        "buffer-results-to-out-params writes it, is taken: the allocation "
        "becomes the result)");
  return op.emitOpError("cannot be expressed in a cuda artifact's "
                        "manifest (the host side may only allocate "
                        "buffers and launch kernels)");
}

LogicalResult HostPlanner::planAlloc(memref::AllocOp alloc) {
  std::optional<StringRef> dtype =
      getDtypeName(alloc.getType().getElementType());
  if (!dtype)
    return alloc.emitOpError("allocates a buffer the manifest cannot describe");
  FailureOr<json::Array> shape = allocShape(alloc);
  if (failed(shape))
    return failure();
  if (memref::CopyOp copy = findResultCopy(alloc))
    return planResultAlloc(alloc, copy, *shape);
  int64_t index = plan.buffers.size();
  refs[alloc] = {"buffer", index};
  plan.buffers.push_back(json::Object{{"name", ("scratch" + Twine(index)).str()},
                                      {"dtype", dtype->str()},
                                      {"shape", std::move(*shape)}});
  return success();
}

/// A scratch buffer's shape: its static sizes and the symbols of its dynamic
/// ones, an expression's being a named size.
FailureOr<json::Array> HostPlanner::allocShape(memref::AllocOp alloc) {
  json::Array shape;
  auto dynamic = alloc.getDynamicSizes().begin();
  for (auto [dim, size] : llvm::enumerate(alloc.getType().getShape())) {
    if (!ShapedType::isDynamic(size)) {
      shape.push_back(size);
      continue;
    }
    Value value = *dynamic++;
    std::string what = ("dimension " + Twine(dim)).str();
    FailureOr<json::Value> traced = sizes.trace(value, alloc, what);
    if (failed(traced))
      return failure();
    if (traced->getAsString() || traced->getAsInteger())
      shape.push_back(std::move(*traced));
    else
      shape.push_back(nameSize(std::move(*traced)));
  }
  return shape;
}

/// After buffer-results-to-out-params, a dynamically shaped result is an
/// allocation that the function copies into the result's out-param after the
/// launches that write it. Returns that copy if `alloc` is such a result:
/// its other users are launches (directly or through views), memref.dim and
/// deallocations.
memref::CopyOp HostPlanner::findResultCopy(memref::AllocOp alloc) {
  memref::CopyOp copy;
  SmallVector<Value> buffers{alloc};
  while (!buffers.empty()) {
    for (Operation *user : buffers.pop_back_val().getUsers()) {
      if (isView(user)) {
        buffers.push_back(user->getResult(0));
        continue;
      }
      if (isa<gpu::LaunchFuncOp, memref::DimOp, memref::DeallocOp>(user))
        continue;
      auto userCopy = dyn_cast<memref::CopyOp>(user);
      if (!userCopy || copy || userCopy.getSource() != alloc)
        return {};
      copy = userCopy;
    }
  }
  auto target = copy ? dyn_cast<BlockArgument>(copy.getTarget()) : nullptr;
  if (!target || target.getOwner() != &host.getBody().front() ||
      target.getArgNumber() < numArgs)
    return {};
  for (Operation *op = copy->getNextNode(); op; op = op->getNextNode())
    if (isa<gpu::LaunchFuncOp>(op))
      return {};
  return copy;
}

LogicalResult HostPlanner::planResultAlloc(memref::AllocOp alloc,
                                           memref::CopyOp copy,
                                           const json::Array &shape) {
  unsigned arg = cast<BlockArgument>(copy.getTarget()).getArgNumber();
  const json::Array &expected = *shapes[arg];
  if (shape != expected)
    return alloc.emitOpError()
           << "allocates result " << arg - numArgs << " with shape "
           << formatShape(shape) << ", but the result's shape is "
           << formatShape(expected);
  refs[alloc] = {"result", arg - numArgs};
  resultCopies.insert(copy);
  return success();
}

LogicalResult HostPlanner::planView(Operation *view) {
  if (auto cast = dyn_cast<memref::ReinterpretCastOp>(view))
    if (getConstantIntValue(cast.getMixedOffsets().front()) != 0)
      return view->emitOpError(
          "views a buffer at an offset other than 0, which a kernel "
          "parameter cannot pass (it passes the address of a whole "
          "argument, result or scratch buffer)");
  auto source = refs.find(view->getOperand(0));
  if (source == refs.end())
    return view->emitOpError("views a value that is neither an argument, a "
                             "result nor a scratch buffer");
  ParamRef ref = source->second;
  refs[view->getResult(0)] = ref;
  return success();
}

LogicalResult HostPlanner::planLaunch(gpu::LaunchFuncOp launch) {
  json::Array params;
  for (auto [index, operand] : llvm::enumerate(launch.getKernelOperands())) {
    FailureOr<json::Value> param = planParam(launch, index, operand);
    if (failed(param))
      return failure();
    params.push_back(std::move(*param));
  }
  FailureOr<json::Array> grid = planGrid(launch);
  FailureOr<json::Array> block =
      constantDims(launch, launch.getBlockSizeOperandValues());
  if (failed(grid) || failed(block))
    return failure();
  int64_t shared = 0;
  if (Value dyn = launch.getDynamicSharedMemorySize()) {
    std::optional<int64_t> c = getConstantIntValue(dyn);
    if (!c)
      return launch.emitOpError(
          "has a dynamic shared memory size that is not a constant");
    shared = *c;
  }
  json::Object entry{{"kernel", launch.getKernelName().getValue().str()},
                     {"grid", std::move(*grid)},
                     {"block", std::move(*block)},
                     {"shared_bytes", shared},
                     {"params", std::move(params)}};
  if (launch->hasAttr(kEarlyLaunchAttrName)) {
    // It would overlap the caller's previous work, which it cannot wait for.
    if (plan.launches.empty())
      return launch.emitOpError("is an early launch but the function's first");
    entry["early"] = true;
  }
  plan.launches.push_back(std::move(entry));
  return success();
}

/// A buffer parameter names what it views; an i32 parameter is the size of
/// one symbol (a named size where it is an expression or a constant), which
/// the runtime passes as a 32-bit integer.
FailureOr<json::Value> HostPlanner::planParam(gpu::LaunchFuncOp launch,
                                              unsigned index, Value operand) {
  std::string what = ("kernel operand " + Twine(index)).str();
  if (isa<MemRefType>(operand.getType())) {
    auto it = refs.find(operand);
    if (it == refs.end())
      return launch.emitOpError()
             << what << " is neither an argument, a result nor a scratch "
             << "buffer (nor a view of one)";
    return json::Value(json::Object{{it->second.kind, it->second.index}});
  }
  if (!operand.getType().isInteger(32))
    return launch.emitOpError()
           << what << " has type " << operand.getType()
           << "; a kernel parameter is a buffer or an i32 size";
  FailureOr<json::Value> size = sizes.trace(operand, launch, what);
  if (failed(size))
    return failure();
  std::optional<StringRef> symbol = size->getAsString();
  std::string name = symbol ? symbol->str() : nameSize(std::move(*size));
  return json::Value(json::Object{{"dim", name}});
}

FailureOr<json::Array> HostPlanner::planGrid(gpu::LaunchFuncOp launch) {
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  Value dims[] = {grid.x, grid.y, grid.z};
  json::Array out;
  for (auto [i, value] : llvm::enumerate(dims)) {
    FailureOr<json::Value> size =
        sizes.trace(value, launch, "grid " + StringRef("xyz").substr(i, 1));
    if (failed(size))
      return failure();
    out.push_back(std::move(*size));
  }
  return out;
}

FailureOr<LaunchPlan> mlir::qattn::planLaunches(func::FuncOp host,
                                                const json::Object &fn) {
  const json::Array &args = *fn.getArray("args");
  SmallVector<const json::Array *> shapes;
  for (const json::Array *list : {&args, fn.getArray("results")})
    for (const json::Value &tensor : *list)
      shapes.push_back(tensor.getAsObject()->getArray("shape"));
  if (host.getNumArguments() != shapes.size())
    return host.emitOpError() << "has " << host.getNumArguments()
                              << " arguments after bufferization, expected "
                              << shapes.size()
                              << " (the arguments and one out-param for each "
                                 "result)";
  return HostPlanner(host, args.size(), shapes).run();
}
