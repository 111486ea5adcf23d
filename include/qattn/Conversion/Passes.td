//===- Passes.td - qattn conversion passes -----------------*- tablegen -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_CONVERSION_PASSES_TD
#define QATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def QAttnLowerReference : Pass<"qattn-lower-reference", "mlir::ModuleOp"> {
  let summary = "Lower every qattn op to loops over buffers: the executable specification";
  let description = [{
    Rewrites each qattn op into upstream `scf`, `arith`, `math`, `memref`,
    `tensor` and `bufferization` ops that compute exactly what
    docs/FORMAT.md specifies, element by element, with no tiling and no
    cleverness. The result bufferizes with one-shot bufferization and runs on
    the CPU; the GPU path is checked against it.

    Quantized operands of `qattn.attention` are first dequantized to f32 with
    the dialect's own dequantize ops (so each format rule lives in one
    lowering), then attention runs in f32 with a two-pass softmax per row.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"];
}

def QAttnExportCInterface : Pass<"qattn-export-c-interface", "mlir::ModuleOp"> {
  let summary = "Give every public function a C entry point (_mlir_ciface_NAME)";
  let description = [{
    Marks public `func.func` definitions with `llvm.emit_c_interface`, so that
    the LLVM lowering emits the `_mlir_ciface_` wrapper taking memref
    descriptors by pointer: the calling convention of docs/ARTIFACT.md.
  }];
}

def QAttnConvertToGPU : Pass<"qattn-convert-to-gpu", "mlir::ModuleOp"> {
  let summary = "Lower qattn.attention to GPU kernels and host launches";
  let description = [{
    Replaces each tiled `qattn.attention` (see `qattn-tile`) with
    `gpu.launch_func`s of kernels it builds in `gpu.module @qattn_kernels`:
    one warp per query and KV head, serving all the query heads that share
    it, lanes over the head dimension, keys streamed with an online softmax
    (`keys_per_step` keys loaded per step) and dequantized in registers (stage 2 in integers, then
    the stage-1 scale), a warp shuffle reduction for each score; with several
    key splits, each CTA writes a partial row (output, max, sum) to scratch
    buffers and a combine kernel merges them (flash-decoding).

    A decode grid of the tile layer (the `scf.forall` qattn-tile writes for
    decode, see its `tile-layer`) becomes a kernel of one warp per
    grid point (the forall's mapping: linear block dims 0 (fastest) and 1
    on grid x, 2 on y, 3 on z; a dynamic fastest dim must be the split) and
    its `qattn.combine_splits` a combine kernel of warps per output row,
    launched early (below).
    The tensors pass as flat views (`memref.reinterpret_cast`, 2^40
    elements) with each dynamic size as an i32, so one artifact serves every
    batch, length and pool; a split count computed at run time is the
    partial rows' dynamic dimension 3, which both kernels take so (the
    combine loops over it). The kernel asks ptxas for the occupancy that
    qattn-tile sized the splits by (`nvvm.minctasm`, qattn/Target/Chip.h).
    The grid body is rewritten op by op into the
    lanes' registers: loads straight from global memory (a pipelined key
    loop's look-ahead loads stay in flight until first use), exact f16x2
    dequantization, mma.sync for S^T = K Q^T and O^T += V^T P^T, the online
    softmax in base 2 (SAS: a max pass, then its terms). Formats it does not take yet are a diagnostic on the
    attention naming them.

    Operands enter and leave through `bufferization.to_buffer` / `to_tensor`,
    so the host function bufferizes with one-shot bufferization; the host
    side then only allocates scratch buffers and launches kernels, which is
    what the artifact manifest records.

    A launch that reads what the launch before it wrote (the combine
    kernels, the prefill attention kernel after its stage launch) is marked
    `qattn.early_launch`: it may start while that one finishes (programmatic
    dependent launch), its kernel waiting with `griddepcontrol.wait` before
    the first such read, the earlier kernel allowing it with
    `griddepcontrol.launch_dependents`.

    The warpgroup prefill kernels with e4m3 P.V or
    a head dimension of 64 get 32-bit index arithmetic (`dlti.dl_spec<index = 32>` on the
    kernel module, which `convert-gpu-to-nvvm` follows) when every memref in
    the module has fewer than 2^31 bytes and no nvgpu op takes a memref
    (`convert-nvgpu-to-nvvm` lowers those with 64-bit indices regardless).
    Global addresses for inline PTX are then read from the memref
    descriptors as 64-bit pointers.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The GPU (NVVM chip name) whose limits (shared memory, registers) "
           "the kernels are sized by (default sm_90a)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::DLTIDialect", "::mlir::gpu::GPUDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"];
}

#endif // QATTN_CONVERSION_PASSES_TD
