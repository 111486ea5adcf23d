//===- Pipelines.h - registered end-to-end qattn pipelines ------*- C++ -*-===//
//
// Part of the qattn project.
//
// Each pipeline is built by one function and registered once under a name, so
// qattn-opt, qattn-compile, the C API and the tests run the very same passes.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_PIPELINES_PIPELINES_H
#define QATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir::qattn {

/// `qattn-reference-to-llvm`: qattn ops on tensors -> LLVM dialect for the
/// host CPU through the reference lowering. Public functions get C entry
/// points taking memref descriptors, results as trailing out-parameters.
LogicalResult buildReferenceToLLVMPipeline(OpPassManager &pm);

/// Options of the GPU pipeline.
struct GpuPipelineOptions {
  std::string chip = "sm_90a";
  std::string features = "+ptx80";
  /// qattn-tile's pv-e4m3: the wgmma prefill kernel's P.V on fp8 where it
  /// applies (reduced precision, opt-in).
  bool pvE4m3 = false;
  /// More qattn-tile options, as its pass options spell them (e.g.
  /// "splits=8 tile-keys=16"): for experiments with the tiling heuristics.
  std::string tileOptions;
  /// qattn-pipeline options, likewise (e.g. "num-stages=3").
  std::string pipelineOptions;
};

/// `qattn-to-gpu`: qattn.attention on tensors -> a host function on buffers
/// that only allocates scratch and launches kernels, plus `gpu.module
/// @qattn_kernels` lowered to NVVM and attached to an NVVM target. The
/// artifact emitter then serializes the module (gpu-module-to-binary).
LogicalResult buildQAttnToGPUPipeline(OpPassManager &pm,
                                      const GpuPipelineOptions &options);

/// Registers the dialect's passes and the pipelines above; a pipeline already
/// registered is left alone. The pipelines also name upstream passes:
/// registerAllPasses() (qattn/InitAll.h) registers those too.
void registerQAttnPassesAndPipelines();

} // namespace mlir::qattn

#endif // QATTN_PIPELINES_PIPELINES_H
