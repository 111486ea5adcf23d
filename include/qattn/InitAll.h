//===- InitAll.h - register everything qattn needs --------------*- C++ -*-===//
//
// Part of the qattn project.
//
// The one entry point that qattn-opt, qattn-compile, the C API and an
// embedding compiler call instead of repeating qattn-opt's registration
// (docs/EMBEDDING.md, examples/embed/). Library QAttnInitAll.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_INITALL_H
#define QATTN_INITALL_H

namespace mlir {
class DialectRegistry;

namespace qattn {

/// Adds to `registry` the qattn dialect and what its modules and pipelines
/// need from upstream, not all of it: the dialects they are written in and
/// lower through (affine, arith, bufferization, cf, func, gpu, index, linalg,
/// llvm, math, memref, nvgpu, nvvm, scf, tensor, ub, vector), those dialects'
/// external models and extensions (bufferization, value bounds, inlining,
/// to-LLVM patterns, the NVVM target), and the LLVM IR translations of the
/// builtin, LLVM, NVVM and GPU dialects.
void registerAllDialects(DialectRegistry &registry);

/// Registers qattn's passes (qattn-tile, qattn-raise-attention, ...), its
/// named pipelines (qattn-reference-to-llvm, qattn-to-gpu) and the upstream
/// passes those pipelines name, so that parsePassPipeline and
/// PassPipelineInfo::lookup find them. Registers no upstream pipeline, so it
/// may be called before or after mlir::registerAllPasses(); calling it again
/// does nothing. Thread-safe.
void registerAllPasses();

} // namespace qattn
} // namespace mlir

#endif // QATTN_INITALL_H
