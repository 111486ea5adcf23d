//===-- qattn-c/QAttn.h - C API of qattn -------------------------*- C -*-===//
//
// Part of the qattn project.
//
// The C API an embedding compiler links against (library QAttnCAPI, CMake
// target QAttn::QAttnCAPI; docs/EMBEDDING.md). It extends MLIR's C API: the
// MlirContext, MlirModule, diagnostics and so on are mlir-c's, and
// libQAttnCAPI.so carries the mlir-c core (mlir-c/IR.h, Diagnostics.h,
// Pass.h, Support.h, BuiltinTypes.h, BuiltinAttributes.h) next to qattn's
// functions, on top of the packaged libMLIR.so.
//
// Nothing here aborts on bad input: a failure is reported as an error
// diagnostic at the module's location, through the handlers attached to its
// context (mlirContextAttachDiagnosticHandler), and returned as a failed
// MlirLogicalResult.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_C_QATTN_H
#define QATTN_C_QATTN_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The qattn dialect alone: mlirGetDialectHandle__qattn__().
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(QAttn, qattn);

/// Inserts into `registry` the qattn dialect and all of upstream's dialects,
/// their extensions (bufferization and lowering interfaces) and the
/// translations to LLVM IR: what qattn-opt registers, a superset of what a
/// qattn module and its pipelines use (C++: mlir::qattn::registerAllDialects).
/// Parse qattn modules in a context created with this registry.
MLIR_CAPI_EXPORTED void qattnRegisterDialects(MlirDialectRegistry registry);

/// Registers qattn's passes (qattn-tile, qattn-lower-reference, ...), the
/// named pipelines `qattn-reference-to-llvm` and `qattn-to-gpu`, and the
/// upstream passes those pipelines are made of, so that textual pipelines
/// (mlirParsePassPipeline, mlirOpPassManagerAddPipeline) can name them.
/// Idempotent and thread-safe. Upstream's own pipelines
/// (buffer-deallocation-pipeline, ...) are registered only if nobody has
/// registered them yet: a host that calls mlirRegisterAllPasses as well must
/// call it first.
MLIR_CAPI_EXPORTED void qattnRegisterPasses(void);

/// Runs the named qattn pipeline on `module`, in place. `pipelineName` is
/// one of
///   "qattn-reference-to-llvm"  qattn ops on tensors -> LLVM dialect for the
///                              host CPU (the reference lowering),
///   "qattn-to-gpu"             qattn.attention -> sm_90a kernels in NVVM
///                              plus a host function launching them,
/// built by the same C++ functions as the registered pipelines. Registers
/// the passes and dialect extensions it needs (qattnRegisterPasses,
/// qattnRegisterDialects) if the caller has not. An unknown name is an error.
MLIR_CAPI_EXPORTED MlirLogicalResult qattnRunPipeline(MlirModule module,
                                                     MlirStringRef pipelineName);

/// Compiles `module` (tensor level, qattn ops) into an artifact directory
/// `outputDir` (docs/ARTIFACT.md), as `qattn-compile --target=<target>`
/// does. `target` is "cpu" (module.so through the reference lowering; needs
/// a C compiler driver `cc` to link) or "cuda" (module.ptx, and module.cubin
/// when ptxas is found; sm_90a). An attention still in linalg (not raised
/// by qattn-raise-attention) is an error, as for qattn-compile without
/// --allow-unquantized. The module is lowered in place: clone it first
/// (mlirOperationClone) to keep the tensor-level IR.
MLIR_CAPI_EXPORTED MlirLogicalResult qattnEmitArtifact(MlirModule module,
                                                      MlirStringRef target,
                                                      MlirStringRef outputDir);

#ifdef __cplusplus
}
#endif

#endif // QATTN_C_QATTN_H
