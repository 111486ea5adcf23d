//===- QAttn.cpp - C API of qattn -----------------------------------------===//
//
// Part of the qattn project.
//
// Thin wrappers: the pipelines come from their C++ builders, the artifacts
// from the emitters qattn-compile uses, so C callers get exactly the CLI's
// behaviour. Failures become error diagnostics at the module, never aborts.
//
//===----------------------------------------------------------------------===//

#include "qattn-c/QAttn.h"

#include "qattn/Dialect/QAttn/IR/QAttnDialect.h"
#include "qattn/InitAll.h"
#include "qattn/Pipelines/Pipelines.h"
#include "qattn/Target/Artifact.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

using namespace mlir;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(QAttn, qattn, mlir::qattn::QAttnDialect)

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void qattnRegisterDialects(MlirDialectRegistry registry) {
  // All of upstream's dialects too: a C host has no other way to register
  // them (this library exports no per-dialect C API).
  mlir::registerAllDialects(*unwrap(registry));
  registerAllExtensions(*unwrap(registry));
  registerAllToLLVMIRTranslations(*unwrap(registry));
  qattn::registerAllDialects(*unwrap(registry));
}

void qattnRegisterPasses(void) {
  // A C host cannot register upstream's passes itself (this library exports
  // no mlirRegisterAllPasses), so all of them come along. Registering a named
  // pipeline twice is a fatal error in MLIR, and the host (or a C++ copy of
  // qattn in the same process) may have registered upstream's already: look
  // before registering, once per process. qattn::registerAllPasses registers
  // no upstream pipeline and looks before registering its own.
  static const bool registered = [] {
    if (!PassPipelineInfo::lookup("buffer-deallocation-pipeline"))
      mlir::registerAllPasses();
    qattn::registerAllPasses();
    return true;
  }();
  (void)registered;
}

/// What the pipelines and emitters need in `module`'s context: the passes
/// their textual pipelines name, and the interfaces one-shot-bufferize and
/// the LLVM translation look up. Cheap when the caller registered them.
static void prepare(ModuleOp module) {
  qattnRegisterPasses();
  DialectRegistry registry;
  qattn::registerAllDialects(registry);
  module.getContext()->appendDialectRegistry(registry);
}

//===----------------------------------------------------------------------===//
// Pipelines and artifacts
//===----------------------------------------------------------------------===//

MlirLogicalResult qattnRunPipeline(MlirModule cModule,
                                   MlirStringRef pipelineName) {
  ModuleOp module = unwrap(cModule);
  StringRef name = unwrap(pipelineName);
  prepare(module);

  PassManager pm(module.getContext());
  LogicalResult built = failure();
  if (name == "qattn-reference-to-llvm") {
    built = qattn::buildReferenceToLLVMPipeline(pm);
  } else if (name == "qattn-to-gpu") {
    built = qattn::buildQAttnToGPUPipeline(pm, qattn::GpuPipelineOptions());
  } else {
    emitError(module.getLoc())
        << "unknown qattn pipeline '" << name
        << "' (available: qattn-reference-to-llvm, qattn-to-gpu)";
    return wrap(failure());
  }
  if (failed(built)) {
    emitError(module.getLoc()) << "cannot build the pipeline '" << name << "'";
    return wrap(failure());
  }
  return wrap(pm.run(module));
}

MlirLogicalResult qattnEmitArtifact(MlirModule cModule, MlirStringRef cTarget,
                                    MlirStringRef outputDir) {
  ModuleOp module = unwrap(cModule);
  StringRef target = unwrap(cTarget);
  prepare(module);

  if (target == "cpu") {
    qattn::CpuArtifactOptions options;
    options.outputDir = unwrap(outputDir).str();
    return wrap(qattn::emitCpuArtifact(module, options));
  }
  if (target == "cuda") {
    qattn::CudaArtifactOptions options;
    options.outputDir = unwrap(outputDir).str();
    return wrap(qattn::emitCudaArtifact(module, options));
  }
  emitError(module.getLoc()) << "unknown qattn target '" << target
                             << "' (available: cpu, cuda)";
  return wrap(failure());
}
