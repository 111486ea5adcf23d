//===- QAttnDialect.td - qattn dialect definition ----------*- tablegen -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_DIALECT_QATTN_IR_QATTNDIALECT_TD
#define QATTN_DIALECT_QATTN_IR_QATTNDIALECT_TD

include "mlir/IR/OpBase.td"

def QAttn_Dialect : Dialect {
  let name = "qattn";
  let cppNamespace = "::mlir::qattn";
  let summary = "Quantized attention: blockwise progressive quantization and fused attention";
  let description = [{
    The `qattn` dialect states how the query, key and value tensors of an
    attention are quantized and the attention computed over the quantized
    operands. Quantized tensors are plain builtin tensors (int8 data, packed
    codes, scales and zero points); the attributes `#qattn.stage1` and
    `#qattn.stage2` carry the format completely, so verifiers can check every
    shape and lowerings need nothing from outside the IR. The byte layout is
    specified in docs/FORMAT.md.

    Stage 1 is symmetric int8 per block of tokens (`qattn.quantize`); stage 2
    compresses int8 to 2, 3 or 4 bits per channel in groups of tokens with
    integer scales and zero points (`qattn.progressive_quantize`), so that
    dequantization stays in integers. `qattn.attention` is the fused attention
    over such operands; `qattn.buffer_append` and `qattn.buffer_flush` manage
    the int8 decode buffer of a quantized KV cache.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

#endif // QATTN_DIALECT_QATTN_IR_QATTNDIALECT_TD
