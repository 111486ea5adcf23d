//===- CudaArtifact.cpp - compile a module to PTX/cubin + launch manifest -===//
//
// Part of the qattn project.
//
// After the GPU pipeline the host functions only allocate scratch buffers and
// launch kernels; that sequence becomes the manifest's `launches`, so the
// runtime needs no compiled host code. The kernel module is serialized with
// upstream gpu-module-to-binary: PTX always, a cubin when ptxas is there.
//
//===----------------------------------------------------------------------===//

#include "qattn/Conversion/Passes.h"
#include "qattn/Target/Artifact.h"
#include "qattn/Target/Chip.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

using namespace mlir;
using namespace mlir::qattn;
namespace json = llvm::json;

namespace {
/// What a kernel parameter refers to, in manifest terms.
struct ParamRef {
  StringRef kind; // "arg", "result" or "buffer"
  int64_t index;
};

/// The manifest's `buffers` and `launches` of one host function.
struct LaunchPlan {
  json::Array buffers, launches;
};
} // namespace

static FailureOr<json::Array> launchDims(gpu::LaunchFuncOp launch,
                                         gpu::KernelDim3 dims) {
  json::Array out;
  for (Value v : {dims.x, dims.y, dims.z}) {
    std::optional<int64_t> c = getConstantIntValue(v);
    if (!c)
      return launch.emitOpError("has a launch size that is not a constant");
    out.push_back(*c);
  }
  return out;
}

/// Reads the bufferized host function: arguments, then result out-params,
/// then allocations (scratch) and launches, in order.
static FailureOr<LaunchPlan> planLaunches(func::FuncOp host,
                                          unsigned numArgs) {
  LaunchPlan plan;
  DenseMap<Value, ParamRef> refs;
  for (BlockArgument arg : host.getArguments()) {
    unsigned i = arg.getArgNumber();
    refs[arg] = i < numArgs ? ParamRef{"arg", i} : ParamRef{"result", i - numArgs};
  }
  for (Operation &op : host.getBody().front()) {
    if (isa<arith::ConstantOp, func::ReturnOp, memref::DeallocOp>(op))
      continue;
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      MemRefType type = alloc.getType();
      std::optional<StringRef> dtype = getDtypeName(type.getElementType());
      if (!dtype || !type.hasStaticShape())
        return alloc.emitOpError("allocates a buffer the manifest cannot describe");
      int64_t index = plan.buffers.size();
      refs[alloc] = {"buffer", index};
      plan.buffers.push_back(json::Object{
          {"name", ("scratch" + Twine(index)).str()},
          {"dtype", dtype->str()},
          {"shape", json::Array(type.getShape())}});
      continue;
    }
    auto launch = dyn_cast<gpu::LaunchFuncOp>(op);
    if (!launch)
      return op.emitOpError("cannot be expressed in a cuda artifact's "
                            "manifest (the host side may only allocate "
                            "buffers and launch kernels)");
    json::Array params;
    for (Value operand : launch.getKernelOperands()) {
      auto it = refs.find(operand);
      if (it == refs.end())
        return launch.emitOpError("passes a value that is neither an "
                                  "argument, a result nor a scratch buffer");
      params.push_back(json::Object{{it->second.kind, it->second.index}});
    }
    FailureOr<json::Array> grid = launchDims(launch, launch.getGridSizeOperandValues());
    FailureOr<json::Array> block = launchDims(launch, launch.getBlockSizeOperandValues());
    if (failed(grid) || failed(block))
      return failure();
    int64_t shared = 0;
    if (Value dyn = launch.getDynamicSharedMemorySize()) {
      std::optional<int64_t> c = getConstantIntValue(dyn);
      if (!c)
        return launch.emitOpError("has a dynamic shared memory size that is not a constant");
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
        return launch.emitOpError(
            "is an early launch but the function's first");
      entry["early"] = true;
    }
    plan.launches.push_back(std::move(entry));
  }
  return plan;
}

/// The kernels' launch grids and scratch buffers are sized at compile time,
/// so a cuda artifact takes no dynamically shaped tensor (yet).
static LogicalResult checkStaticSignatures(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    auto check = [&](StringRef what, unsigned index,
                     Type type) -> LogicalResult {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || tensor.hasStaticShape())
        return success();
      return func.emitError()
             << "cannot export " << what << " " << index << " of type " << type
             << " for target cuda: dynamic sizes are not supported there yet "
                "(its launch grids are static); target cpu takes them";
    };
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
      if (failed(check("arg", i, type)))
        return failure();
    for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
      if (failed(check("result", i, type)))
        return failure();
  }
  return success();
}

static std::string defaultToolkitPath() {
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (std::optional<std::string> v = llvm::sys::Process::GetEnv(var))
      return *v;
  return "/usr/local/cuda";
}

/// Serializes the kernel module of a copy of `module` to `format` ("isa" for
/// PTX, "bin" for a cubin) and returns the bytes.
static FailureOr<std::string> serialize(ModuleOp module, StringRef format,
                                        StringRef toolkit) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager pm(module.getContext());
  std::string pipeline = ("gpu-module-to-binary{format=" + format +
                          " toolkit=" + toolkit + "}")
                             .str();
  if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(*copy)))
    return failure();
  for (auto binary : copy->getOps<gpu::BinaryOp>())
    for (Attribute attr : binary.getObjects())
      return cast<gpu::ObjectAttr>(attr).getObject().getValue().str();
  return emitError(module.getLoc(), "no kernel binary was produced");
}

LogicalResult mlir::qattn::emitCudaArtifact(ModuleOp module,
                                            const CudaArtifactOptions &options) {
  Location loc = module.getLoc();
  // Checked here: the chip also goes to upstream's NVVM target, which does
  // not check it.
  if (!lookupChip(options.gpu.chip))
    return emitError(loc) << "unknown chip '" << options.gpu.chip
                          << "'; qattn has kernels for " << knownChips();
  FailureOr<json::Array> functions = describeFunctions(module);
  if (failed(functions) || failed(checkStaticSignatures(module)))
    return failure();
  stripNameAttributes(module);

  PassManager pm(module.getContext());
  if (failed(buildQAttnToGPUPipeline(pm, options.gpu)) || failed(pm.run(module)))
    return failure();

  for (json::Value &value : *functions) {
    json::Object &fn = *value.getAsObject();
    auto host = module.lookupSymbol<func::FuncOp>(*fn.getString("name"));
    FailureOr<LaunchPlan> plan =
        planLaunches(host, fn.getArray("args")->size());
    if (failed(plan))
      return failure();
    fn["buffers"] = std::move(plan->buffers);
    fn["launches"] = std::move(plan->launches);
  }

  if (failed(createArtifactDir(loc, options.outputDir)))
    return failure();
  StringRef dir = options.outputDir;
  std::string toolkit =
      options.toolkitPath.empty() ? defaultToolkitPath() : options.toolkitPath;
  FailureOr<std::string> ptx = serialize(module, "isa", toolkit);
  if (failed(ptx) ||
      failed(writeArtifactFile(loc, dir, "module.ptx",
                               [&](raw_ostream &os) { os << *ptx; })))
    return failure();

  std::string library = "module.ptx";
  if (options.emitCubin) {
    // Without ptxas the PTX alone is a complete artifact: say so, go on.
    std::string why;
    FailureOr<std::string> cubin;
    {
      ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
        why = d.str();
        return success();
      });
      cubin = serialize(module, "bin", toolkit);
    }
    if (succeeded(cubin)) {
      if (failed(writeArtifactFile(loc, dir, "module.cubin",
                                   [&](raw_ostream &os) { os << *cubin; })))
        return failure();
      library = "module.cubin";
    } else {
      emitWarning(loc) << "no cubin (the driver will JIT the PTX): " << why;
    }
  }

  return writeManifest(loc, dir,
                       json::Object{{"target", "cuda"},
                        {"chip", options.gpu.chip},
                        {"library", library},
                        {"ptx", "module.ptx"}},
                       std::move(*functions));
}
