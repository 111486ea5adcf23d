//===- Artifact.h - emit compiled artifacts and their manifest --*- C++ -*-===//
//
// Part of the qattn project.
//
// An artifact is a directory with the compiled code and manifest.json, the
// runtime's only source of truth about it (docs/ARTIFACT.md).
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_TARGET_ARTIFACT_H
#define QATTN_TARGET_ARTIFACT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::qattn {

/// Describes every public function of a tensor-level module for the manifest:
/// names, argument/result dtypes and shapes, and what the function computes
/// (`reference`). Emits an error at the offending function and fails on
/// anything the calling convention cannot express.
FailureOr<llvm::json::Array> describeFunctions(ModuleOp module);

struct CpuArtifactOptions {
  std::string outputDir;
  /// Also write the optimized LLVM IR as module.ll.
  bool emitLLVMIR = false;
  /// The C compiler driver that links the object into a shared library.
  std::string linker = "cc";
};

/// Lowers `module` (tensor level, qattn ops) through the CPU reference
/// pipeline and writes module.so and manifest.json into the output directory.
LogicalResult emitCpuArtifact(ModuleOp module, const CpuArtifactOptions &options);

} // namespace mlir::qattn

#endif // QATTN_TARGET_ARTIFACT_H
