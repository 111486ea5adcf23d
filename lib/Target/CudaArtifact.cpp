//===- CudaArtifact.cpp - compile a module to PTX/cubin + launch manifest -===//
//
// Part of the qattn project.
//
// After the GPU pipeline the host functions only compute sizes, allocate
// scratch buffers and launch kernels; that sequence becomes the manifest's
// `buffers` and `launches` (CudaHostPlan.cpp), so the runtime needs no
// compiled host code. The kernel module is serialized with
// upstream gpu-module-to-binary: PTX always, a cubin when ptxas is there.
//
//===----------------------------------------------------------------------===//

#include "CudaHostPlan.h"
#include "UnraisedAttention.h"

#include "qattn/Target/Artifact.h"
#include "qattn/Target/Chip.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

using namespace mlir;
using namespace mlir::qattn;
namespace json = llvm::json;

/// Adds the buffers and launches of each host function to its manifest entry
/// in `functions`. Reports every function's first problem, not only the
/// first function's.
static LogicalResult planFunctions(ModuleOp module, json::Array &functions) {
  bool failedAny = false;
  for (json::Value &value : functions) {
    json::Object &fn = *value.getAsObject();
    auto host = module.lookupSymbol<func::FuncOp>(*fn.getString("name"));
    FailureOr<LaunchPlan> plan = planLaunches(host, fn);
    if (failed(plan)) {
      failedAny = true;
      continue;
    }
    if (!plan->sizes.empty())
      fn["sizes"] = std::move(plan->sizes);
    fn["buffers"] = std::move(plan->buffers);
    fn["launches"] = std::move(plan->launches);
  }
  return failure(failedAny);
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
  if (!options.allowUnquantized && failed(checkAttentionRaised(module)))
    return failure();
  FailureOr<json::Array> functions = describeFunctions(module);
  if (failed(functions))
    return failure();
  stripNameAttributes(module);

  PassManager pm(module.getContext());
  if (failed(buildQAttnToGPUPipeline(pm, options.gpu)) || failed(pm.run(module)))
    return failure();

  if (failed(planFunctions(module, *functions)))
    return failure();

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
  std::string librarySha256 = getSha256Hex(*ptx);
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
      librarySha256 = getSha256Hex(*cubin);
    } else {
      emitWarning(loc) << "no cubin (the driver will JIT the PTX): " << why;
    }
  }

  return writeManifest(loc, dir,
                       json::Object{{"target", "cuda"},
                                    {"chip", options.gpu.chip},
                                    {"library", library},
                                    {"library_sha256", librarySha256},
                                    {"ptx", "module.ptx"},
                                    {"ptx_sha256", getSha256Hex(*ptx)}},
                       std::move(*functions));
}
