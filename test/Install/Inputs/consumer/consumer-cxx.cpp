//===- consumer-cxx.cpp - qattn's C++ libraries from an install -----------===//
//
// Part of the qattn project.
//
// Registers qattn's passes and pipelines through QAttn::QAttnPipelines and
// prints the pipelines' names: enough to prove that the installed headers,
// libraries and their link interface (libMLIR.so, libLLVM.so) fit together,
// while compiling in seconds.
//
//===----------------------------------------------------------------------===//

#include "qattn/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

int main() {
  mlir::qattn::registerQAttnPassesAndPipelines();
  for (const char *name : {"qattn-reference-to-llvm", "qattn-to-gpu"}) {
    const mlir::PassPipelineInfo *info = mlir::PassPipelineInfo::lookup(name);
    if (!info) {
      llvm::errs() << "pipeline " << name << " is not registered\n";
      return 1;
    }
    llvm::outs() << "pipeline " << name << ": " << info->getPassDescription()
                 << "\n";
  }
  return 0;
}
