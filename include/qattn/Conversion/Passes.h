//===- Passes.h - qattn conversion passes -----------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_CONVERSION_PASSES_H
#define QATTN_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::qattn {

/// A unit attribute that qattn-convert-to-gpu sets on a gpu.launch_func
/// whose kernel may start before the launch before it has finished
/// (programmatic dependent launch): the kernel waits (griddepcontrol.wait)
/// before it reads anything an earlier launch wrote. The cuda artifact's
/// manifest carries it (docs/ARTIFACT.md).
inline constexpr llvm::StringLiteral kEarlyLaunchAttrName =
    "qattn.early_launch";

#define GEN_PASS_DECL
#include "qattn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "qattn/Conversion/Passes.h.inc"

} // namespace mlir::qattn

#endif // QATTN_CONVERSION_PASSES_H
