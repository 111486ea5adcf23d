//===- Pipelines.cpp - registered end-to-end qattn pipelines --------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Pipelines/Pipelines.h"
#include "qattn/Conversion/Passes.h"
#include "qattn/Dialect/QAttn/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

// Upstream passes by their registered names: the pipeline reads as it would
// on an mlir-opt command line. Upstream's buffer-deallocation-pipeline sits
// between the two halves, built in C++: a named pipeline would have to be
// registered, and MLIR refuses a pipeline name registered twice, which
// registerAllPasses() (InitAll.h) must not risk beside upstream's own.
static constexpr const char *kReferenceToBuffers =
    "qattn-lower-reference,canonicalize,cse,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map},"
    // The artifact's calling convention: results are caller-owned buffers.
    "buffer-results-to-out-params{hoist-static-allocs=true "
    "modify-public-functions=true},"
    // A tiled program's grid runs as a loop nest on the CPU.
    "scf-forall-to-for";
static constexpr const char *kBuffersToLLVM =
    "canonicalize,"
    "convert-linalg-to-loops,expand-strided-metadata,lower-affine,"
    "convert-scf-to-cf,arith-expand{include-bf16=true},convert-math-to-llvm,"
    "finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"
    "convert-cf-to-llvm,qattn-export-c-interface,convert-func-to-llvm,"
    "convert-ub-to-llvm,reconcile-unrealized-casts";

LogicalResult mlir::qattn::buildReferenceToLLVMPipeline(OpPassManager &pm) {
  if (failed(parsePassPipeline(kReferenceToBuffers, pm)))
    return failure();
  bufferization::buildBufferDeallocationPipeline(pm);
  return parsePassPipeline(kBuffersToLLVM, pm);
}

LogicalResult
mlir::qattn::buildQAttnToGPUPipeline(OpPassManager &pm,
                                     const GpuPipelineOptions &options) {
  std::string pipeline =
      "qattn-tile{chip=" + options.chip +
      (options.pvE4m3 ? " pv-e4m3=true" : "") +
      (options.tileOptions.empty() ? "" : " " + options.tileOptions) + "}," +
      "qattn-pipeline" +
      (options.pipelineOptions.empty() ? ""
                                       : "{" + options.pipelineOptions + "}") +
      ",qattn-convert-to-gpu{chip=" + options.chip +
      "},"
      "canonicalize,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "buffer-results-to-out-params{hoist-static-allocs=true "
      "modify-public-functions=true},canonicalize,"
      "nvvm-attach-target{chip=" +
      options.chip + " features=" + options.features +
      " O=3},"
      // Kernel parameters are bare pointers: shapes are static, and the
      // manifest's calling convention passes one address per tensor.
      "gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,"
      "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true},"
      // wgmma and other NVVM ops that lower through inline PTX.
      "convert-nvvm-to-llvm,"
      "canonicalize,cse),reconcile-unrealized-casts";
  return parsePassPipeline(pipeline, pm);
}

namespace {
/// A pipeline's options on the command line: none.
struct NoPipelineOptions : public PassPipelineOptions<NoPipelineOptions> {};

/// qattn-to-gpu's options on the command line (GpuPipelineOptions).
struct GpuPipelineCommandLine
    : public PassPipelineOptions<GpuPipelineCommandLine> {
  Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("The GPU (NVVM chip name) to compile "
                     "for; qattn has kernels for sm_90a (default sm_90a)"),
      llvm::cl::init("sm_90a")};
  Option<bool> pvE4m3{
      *this, "pv-e4m3",
      llvm::cl::desc(
          "Run the wgmma prefill kernel's P.V on fp8 (e4m3) where "
          "V has stage-1 blocks of whole 64-key tiles (default false)"),
      llvm::cl::init(false)};
  Option<std::string> tileOptions{
      *this, "tile-options",
      llvm::cl::desc("More qattn-tile options, as that pass spells them, "
                     "e.g. 'splits=8 tile-keys=16' (default none)"),
      llvm::cl::init("")};
  Option<std::string> pipelineOptions{
      *this, "pipeline-options",
      llvm::cl::desc("More qattn-pipeline options, e.g. 'num-stages=3' "
                     "(default none)"),
      llvm::cl::init("")};
};
} // namespace

/// Registers pipeline `name` (unless it is already) taking `Options`, which
/// --help shows; `takes` names them in the error for a bad one. Upstream's
/// PassPipelineRegistration fails on a bad option without calling the error
/// handler, so `--qattn-to-gpu="block-q=64"` exited 1 without a word.
template <typename Options>
static void registerPipeline(
    StringRef name, StringRef description, StringRef takes,
    std::function<LogicalResult(OpPassManager &, const Options &)> build) {
  if (PassPipelineInfo::lookup(name))
    return;
  std::string arg = name.str(), hint = takes.str();
  registerPassPipeline(
      name, description,
      [arg, hint, build](OpPassManager &pm, StringRef text,
                         function_ref<LogicalResult(const Twine &)> error) {
        std::unique_ptr<Options> options = Options::createFromString(text);
        if (!options)
          return error("pipeline '" + arg + "': bad options '" + text +
                       "' (it takes " + hint + ")");
        if (failed(build(pm, *options)))
          return error("pipeline '" + arg + "' failed to build");
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> showOptions) {
        Options options;
        showOptions(options);
      });
}

void mlir::qattn::registerQAttnPassesAndPipelines() {
  // Registering a pass again is harmless; a pipeline again is a fatal error.
  registerQAttnConversionPasses();
  registerQAttnTransformsPasses();
  registerPipeline<NoPipelineOptions>(
      "qattn-reference-to-llvm",
      "Lower qattn ops through the CPU reference to the LLVM dialect", "none",
      [](OpPassManager &pm, const NoPipelineOptions &) {
        return buildReferenceToLLVMPipeline(pm);
      });
  registerPipeline<GpuPipelineCommandLine>(
      "qattn-to-gpu",
      "Lower qattn.attention to sm_90a kernels in NVVM plus host launches",
      "chip, pv-e4m3, tile-options and pipeline-options",
      [](OpPassManager &pm, const GpuPipelineCommandLine &cli) {
        GpuPipelineOptions options;
        options.chip = cli.chip;
        options.pvE4m3 = cli.pvE4m3;
        options.tileOptions = cli.tileOptions;
        options.pipelineOptions = cli.pipelineOptions;
        return buildQAttnToGPUPipeline(pm, options);
      });
}
