// Bad options are an error at the module, before anything is matched.
// RUN: qattn-opt %s --qattn-raise-attention="k-bits=5" -verify-diagnostics
// RUN: not qattn-opt %s --qattn-raise-attention="v-bits=1" 2>&1 | FileCheck %s --check-prefix=VBITS
// RUN: not qattn-opt %s --qattn-raise-attention="block=64 group=48" 2>&1 | FileCheck %s --check-prefix=GROUP
// RUN: not qattn-opt %s --qattn-raise-attention="anchor=middle" 2>&1 | FileCheck %s --check-prefix=ANCHOR
// RUN: not qattn-opt %s --qattn-raise-attention="fit=best" 2>&1 | FileCheck %s --check-prefix=FIT

// VBITS: error: qattn-raise-attention: v-bits must be 8 (stage 1 only) or 2, 3, 4 (stage 2), got 1
// GROUP: error: qattn-raise-attention: expected a positive group (48) that divides the positive block (64)
// ANCHOR: error: qattn-raise-attention: anchor must be zero or min, got 'middle'
// FIT: error: qattn-raise-attention: fit must be minmax or mse, got 'best'

// expected-error@+1 {{qattn-raise-attention: k-bits must be 8 (stage 1 only) or 2, 3, 4 (stage 2), got 5}}
module {
  func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
    %init = tensor.empty() : tensor<4x10xf32>
    %p = linalg.softmax dimension(1) ins(%x : tensor<4x10xf32>) outs(%init : tensor<4x10xf32>) -> tensor<4x10xf32>
    return %p : tensor<4x10xf32>
  }
}
