//===- main.cpp - qattn embedded in a C++ compiler ------------------------===//
//
// Part of the qattn project.
//
// What a C++ compiler built against the same LLVM/MLIR 22 does to hand its
// attention to qattn (docs/EMBEDDING.md quotes the marked lines): register
// qattn through qattn/InitAll.h, parse a module, run a textual pipeline of
// registered passes on it, and write a cpu artifact with qattn's emitter.
//
//   qattn-embed INPUT.mlir OUTPUT [PIPELINE]
//
// PIPELINE is a comma-separated pass list as on a qattn-opt command line
// (default "qattn-raise-attention": linalg attention becomes qattn ops, qattn
// ops stay as they are). OUTPUT is the artifact folder, or "-" to print the
// module after PIPELINE instead (e.g. PIPELINE "qattn-reference-to-llvm").
//
//===----------------------------------------------------------------------===//

#include "qattn/InitAll.h"
#include "qattn/Target/Artifact.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    llvm::errs() << "usage: " << argv[0] << " INPUT.mlir OUTPUT [PIPELINE]\n";
    return 2;
  }
  std::string inputPath = argv[1], outputDir = argv[2];
  std::string pipeline = argc == 4 ? argv[3] : "qattn-raise-attention";

  // [docs/EMBEDDING.md: register]
  // Once per process: qattn's passes and pipelines, and the upstream passes
  // they name. The registry: qattn and the dialects its modules lower
  // through, their extensions and LLVM IR translations.
  mlir::qattn::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::qattn::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  // [docs/EMBEDDING.md: register]

  // Diagnostics with the input's line and column, on stderr.
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(inputPath, sourceMgr, &context);
  if (!module)
    return 1;

  // [docs/EMBEDDING.md: pipeline]
  // The host's own pipeline may name qattn's passes and pipelines.
  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, llvm::errs())) ||
      mlir::failed(pm.run(*module)))
    return 1;
  // [docs/EMBEDDING.md: pipeline]
  if (outputDir == "-") {
    module->print(llvm::outs());
    return 0;
  }

  // [docs/EMBEDDING.md: artifact]
  // Lowers through qattn-reference-to-llvm, links module.so, writes
  // manifest.json; every error is a diagnostic at the module.
  mlir::qattn::CpuArtifactOptions options;
  options.outputDir = outputDir;
  if (mlir::failed(mlir::qattn::emitCpuArtifact(*module, options)))
    return 1;
  // [docs/EMBEDDING.md: artifact]
  llvm::outs() << "wrote " << outputDir << "/manifest.json and " << outputDir
               << "/module.so\n";
  return 0;
}
