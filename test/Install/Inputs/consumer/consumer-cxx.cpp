//===- consumer-cxx.cpp - qattn's C++ libraries from an install -----------===//
//
// Part of the qattn project.
//
// Registers qattn's passes and pipelines through QAttn::QAttnInitAll, then
// all of upstream's, then qattn's again (InitAll.h promises that any order
// works: qattn registers no upstream pipeline), and prints the pipelines'
// names: enough to prove that the installed headers, libraries and their link
// interface (libMLIR.so, libLLVM.so) fit together, while compiling in
// seconds. examples/embed is the complete C++ example.
//
//===----------------------------------------------------------------------===//

#include "qattn/InitAll.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

int main() {
  mlir::qattn::registerAllPasses();
  mlir::registerAllPasses();
  mlir::qattn::registerAllPasses();
  for (const char *name : {"qattn-reference-to-llvm", "qattn-to-gpu",
                           "buffer-deallocation-pipeline"}) {
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
