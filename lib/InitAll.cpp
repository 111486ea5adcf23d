//===- InitAll.cpp - register everything qattn needs ----------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/InitAll.h"
#include "qattn/Dialect/QAttn/IR/QAttnDialect.h"
#include "qattn/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::qattn::registerAllDialects(DialectRegistry &registry) {
  // The core dialects' interfaces that the pipelines use live in external
  // models registered with the dialects (bufferization of arith, tensor,
  // linalg, scf, func; the NVVM target; the to-LLVM interfaces), spread over
  // most of upstream's list: its whole list keeps them in step with MLIR.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<QAttnDialect>();
}

void mlir::qattn::registerAllPasses() {
  // Pass groups rather than mlir::registerAllPasses(), which also registers
  // upstream's named pipelines: a host calling it after this would register
  // them twice, a fatal error. The groups hold every pass that the pipelines
  // of Pipelines.cpp and the CUDA emitter (gpu-module-to-binary) name.
  static const bool registered = [] {
    registerTransformsPasses();
    registerConversionPasses();
    arith::registerArithPasses();
    bufferization::registerBufferizationPasses();
    registerGPUPasses();
    registerLinalgPasses();
    memref::registerMemRefPasses();
    registerSCFPasses();
    registerQAttnPassesAndPipelines();
    return true;
  }();
  (void)registered;
}
