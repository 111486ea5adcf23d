//===- qattn-opt.cpp - the qattn pass driver ------------------------------===//
//
// Part of the qattn project.
//
// mlir-opt with the qattn dialect, its passes and pipelines, and all of
// upstream's dialects and passes: the tests run upstream passes of their own
// beside qattn's.
//
//===----------------------------------------------------------------------===//

#include "qattn/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::qattn::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::qattn::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "qattn optimizer driver\n", registry));
}
