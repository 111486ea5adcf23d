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
/// need from upstream: the dialects they are written in and lower through,
/// the dialect extensions (bufferization, the NVVM target, inlining, ...)
/// that one-shot-bufferize and the GPU serialization look up, and the LLVM IR
/// translations of the builtin, LLVM, NVVM and GPU dialects.
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
