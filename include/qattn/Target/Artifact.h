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

#include "qattn/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::qattn {

/// Describes every public function of a tensor-level module for the manifest:
/// names, argument/result dtypes and shapes (a dynamic size as the symbol
/// that the tensor's `qattn.dims` attribute gives it), and what the function
/// computes (`reference`). Emits an error at each function that has anything
/// the calling convention cannot express (its first such problem), and then
/// fails.
FailureOr<llvm::json::Array> describeFunctions(ModuleOp module);

/// What a cpu library states about the entry point of manifest function
/// `fn` (an entry of describeFunctions): the dtypes and shapes, symbols
/// included, of its arguments and results, "(f32[B,3,5]) -> (f32[B,3,5])".
/// qattn-run compares it with the manifest before any call
/// (docs/ARTIFACT.md, "Verifying an artifact").
std::string getCpuSignature(const llvm::json::Object &fn);

/// The name of the data symbol that holds the signature of entry point
/// `symbol`: "qattn_signature." + symbol.
std::string getCpuSignatureSymbol(StringRef symbol);

/// The SHA-256 of `bytes` as 64 lowercase hex digits, as the manifest
/// records it for each file it names (library_sha256, ptx_sha256).
std::string getSha256Hex(StringRef bytes);

/// The manifest's name of an element type ("f32", "i8", ...), if it has one.
std::optional<StringRef> getDtypeName(Type type);

/// Drops the `qattn.name` and `qattn.dims` argument/result attributes, once
/// the manifest has them: the lowerings have no use for them.
void stripNameAttributes(ModuleOp module);

/// Creates the artifact directory `dir` (and its parents).
LogicalResult createArtifactDir(Location loc, StringRef dir);

/// Writes dir/manifest.json: the format header, the target's `fields`
/// (target, library, ...) and `functions` (docs/ARTIFACT.md).
LogicalResult writeManifest(Location loc, StringRef dir,
                            llvm::json::Object fields,
                            llvm::json::Array functions);

/// Writes `contents` to `dir/name`, reporting failures at `loc`.
LogicalResult writeArtifactFile(Location loc, StringRef dir, StringRef name,
                                function_ref<void(raw_ostream &)> contents);

struct CpuArtifactOptions {
  std::string outputDir;
  /// Also write the optimized LLVM IR as module.ll.
  bool emitLLVMIR = false;
  /// The C compiler driver that links the object into a shared library.
  std::string linker = "cc";
  /// Compile attention left in linalg (a linalg.softmax, or a softmax
  /// written out between two contractions) as float code instead of
  /// refusing it; linalg.softmax is decomposed first.
  bool allowUnquantized = false;
};

/// Lowers `module` (tensor level, qattn ops) through the CPU reference
/// pipeline and writes module.so and manifest.json into the output directory.
/// Attention that qattn-raise-attention did not raise is an error, unless
/// `options.allowUnquantized`.
LogicalResult emitCpuArtifact(ModuleOp module, const CpuArtifactOptions &options);

struct CudaArtifactOptions {
  std::string outputDir;
  GpuPipelineOptions gpu;
  /// Also assemble a cubin with ptxas (through gpu-module-to-binary). When
  /// that fails the artifact carries PTX only, which the driver can JIT.
  bool emitCubin = true;
  /// CUDA toolkit root for ptxas and libdevice ("" = $CUDA_HOME or
  /// /usr/local/cuda).
  std::string toolkitPath;
  /// Let attention left in linalg through to the GPU pipeline instead of
  /// refusing it (which then refuses it as host code it cannot launch).
  bool allowUnquantized = false;
};

/// Lowers `module` through the GPU pipeline and writes module.ptx,
/// module.cubin (when it can) and manifest.json into the output directory.
LogicalResult emitCudaArtifact(ModuleOp module, const CudaArtifactOptions &options);

} // namespace mlir::qattn

#endif // QATTN_TARGET_ARTIFACT_H
