//===- qattn-opt.cpp - the qattn pass driver ------------------------------===//
//
// Part of the qattn project.
//
// mlir-opt with the qattn dialect, its passes and pipelines, and the upstream
// dialects and passes they lower through.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::qattn::registerQAttnPassesAndPipelines();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::qattn::QAttnDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "qattn optimizer driver\n", registry));
}
