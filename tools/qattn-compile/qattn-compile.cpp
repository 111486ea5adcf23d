//===- qattn-compile.cpp - compile a qattn module to an artifact ----------===//
//
// Part of the qattn project.
//
// qattn-compile INPUT.mlir -o DIR [--target=cpu] [--emit-llvm]
//               [--allow-unquantized]
// writes DIR/manifest.json and the compiled code (docs/ARTIFACT.md).
//
//===----------------------------------------------------------------------===//

#include "qattn/InitAll.h"
#include "qattn/Pipelines/Pipelines.h"
#include "qattn/Target/Artifact.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

#include <tuple>

using namespace mlir;

// Only these show in --help: LLVM's and MLIR's own options (backend flags,
// pass registrations) are hidden, since qattn-compile takes none of them.
static llvm::cl::OptionCategory compileOptions("qattn-compile options");

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<input .mlir>"),
                                            llvm::cl::Required,
                                            llvm::cl::cat(compileOptions));
static llvm::cl::opt<std::string>
    outputDir("o", llvm::cl::desc("Artifact directory to write"),
              llvm::cl::value_desc("dir"), llvm::cl::Required,
              llvm::cl::cat(compileOptions));
static llvm::cl::opt<std::string>
    target("target",
           llvm::cl::desc(
               "What to compile for: cpu (the reference lowering, a "
               "shared library, the default) or cuda (PTX/cubin for the GPU)"),
           llvm::cl::init("cpu"), llvm::cl::cat(compileOptions));
static llvm::cl::opt<std::string>
    chip("chip",
         llvm::cl::desc("GPU architecture for --target=cuda (default "
                        "sm_90a, the one qattn has kernels for)"),
         llvm::cl::init("sm_90a"), llvm::cl::cat(compileOptions));
static llvm::cl::opt<bool>
    noCubin("no-cubin",
            llvm::cl::desc("--target=cuda: write PTX only, skip ptxas"),
            llvm::cl::init(false), llvm::cl::cat(compileOptions));
static llvm::cl::opt<bool>
    pvE4m3("pv-e4m3",
           llvm::cl::desc("--target=cuda: run the wgmma prefill kernel's P.V "
                          "on fp8 (e4m3 P and V codes) where V has one stage-1 "
                          "scale per 64-key tile; faster, relative rounding up "
                          "to 2^-4 per operand (docs/PERF.md)"),
           llvm::cl::init(false), llvm::cl::cat(compileOptions));
static llvm::cl::opt<std::string> tileOptions(
    "tile-options",
    llvm::cl::desc("--target=cuda: more qattn-tile options, as that pass "
                   "spells them (e.g. \"splits=8 tile-keys=16\"; "
                   "qattn-opt --help lists them), for experiments with the "
                   "tiling heuristics (default none)"),
    llvm::cl::init(""), llvm::cl::cat(compileOptions));
static llvm::cl::opt<std::string> pipelineOptions(
    "pipeline-options",
    llvm::cl::desc("--target=cuda: more qattn-pipeline options (e.g. "
                   "\"num-stages=3\": the tile layer's key-loop depth), for "
                   "experiments (default none)"),
    llvm::cl::init(""), llvm::cl::cat(compileOptions));
static llvm::cl::opt<bool> allowUnquantized(
    "allow-unquantized",
    llvm::cl::desc("Compile attention that is still in linalg (a "
                   "linalg.softmax, or a softmax between two contractions, "
                   "that qattn-raise-attention did not raise) as float code; "
                   "default false: such a module is an error"),
    llvm::cl::init(false), llvm::cl::cat(compileOptions));
static llvm::cl::opt<bool> emitLLVM("emit-llvm",
                                    llvm::cl::desc("Also write module.ll"),
                                    llvm::cl::init(false),
                                    llvm::cl::cat(compileOptions));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  qattn::registerAllPasses();
  llvm::cl::HideUnrelatedOptions(compileOptions);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "qattn-compile: compile a qattn module to an artifact\n");

  DialectRegistry registry;
  qattn::registerAllDialects(registry);
  MLIRContext context(registry);
  // --tile-options and --pipeline-options are checked before the module is
  // read (the pass parser says what is wrong).
  using Field = std::string qattn::GpuPipelineOptions::*;
  for (auto [flag, text, pass, field] :
       {std::tuple<StringRef, StringRef, StringRef, Field>{
            "tile-options", tileOptions, "qattn-tile",
            &qattn::GpuPipelineOptions::tileOptions},
        {"pipeline-options", pipelineOptions, "qattn-pipeline",
         &qattn::GpuPipelineOptions::pipelineOptions}}) {
    if (text.empty())
      continue;
    if (target != "cuda") {
      llvm::errs() << "qattn-compile: error: --" << flag
                   << " is for --target=cuda\n";
      return 1;
    }
    qattn::GpuPipelineOptions gpu;
    gpu.*field = text.str();
    OpPassManager pm(ModuleOp::getOperationName());
    if (failed(qattn::buildQAttnToGPUPipeline(pm, gpu))) {
      llvm::errs() << "qattn-compile: error: --" << flag << "='" << text
                   << "' are not options of " << pass
                   << " (qattn-opt --help lists them)\n";
      return 1;
    }
  }

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "qattn-compile: error: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  if (target == "cuda") {
    qattn::CudaArtifactOptions options;
    options.outputDir = outputDir;
    options.gpu.chip = chip;
    options.gpu.pvE4m3 = pvE4m3;
    options.gpu.tileOptions = tileOptions;
    options.gpu.pipelineOptions = pipelineOptions;
    options.emitCubin = !noCubin;
    options.allowUnquantized = allowUnquantized;
    if (failed(qattn::emitCudaArtifact(*module, options)))
      return 1;
    llvm::outs() << "wrote " << outputDir << "/manifest.json and the kernels ("
                 << outputDir << "/module.ptx"
                 << (noCubin ? "" : ", module.cubin if ptxas ran") << ")\n";
    return 0;
  }
  if (target != "cpu") {
    llvm::errs() << "qattn-compile: error: unknown target '" << target
                 << "' (available: cpu, cuda)\n";
    return 1;
  }
  qattn::CpuArtifactOptions options;
  options.outputDir = outputDir;
  options.emitLLVMIR = emitLLVM;
  options.allowUnquantized = allowUnquantized;
  if (failed(qattn::emitCpuArtifact(*module, options)))
    return 1;
  llvm::outs() << "wrote " << outputDir << "/manifest.json and " << outputDir
               << "/module.so\n";
  return 0;
}
