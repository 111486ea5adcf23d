// The stats file is bounded before llvm::json reads it: a device or a pipe
// (/dev/zero exhausted memory), deep nesting (50,000 levels overflowed the
// stack), a string holding brackets (not nesting), a missing file.
// RUN: not qattn-opt %s --qattn-assign-head-bits=stats-file=/dev/zero 2>&1 | FileCheck %s --check-prefix=DEV
// RUN: %python -c "print('[' * 50000 + ']' * 50000)" > %t.deep.json
// RUN: not qattn-opt %s --qattn-assign-head-bits=stats-file=%t.deep.json 2>&1 | FileCheck %s --check-prefix=DEEP
// RUN: %python -c "import json; print(json.dumps({'layer0.k': {'gaps': [1.0, 2.0], 'gap_stds': [0.5, 0.25], 'note': '[[[[' * 100}}))" > %t.brackets.json
// RUN: qattn-opt %s --qattn-assign-head-bits=stats-file=%t.brackets.json | FileCheck %s --check-prefix=OK
// RUN: not qattn-opt %s --qattn-assign-head-bits=stats-file=%t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING

// DEV: error: qattn-assign-head-bits: /dev/zero: not a regular file
// DEEP: error: qattn-assign-head-bits: {{.*}}deep.json: nested deeper than 64 levels
// OK: qattn.progressive_quantize {{.*}}bits = [4, 2]
// MISSING: error: qattn-assign-head-bits: cannot read {{.*}}missing.json: 
func.func @f(%k8: tensor<1x2x16x64xi8>) -> tensor<1x2x1x64xi8> {
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>, qattn.head_stats = "layer0.k"}
      : tensor<1x2x16x64xi8> -> tensor<1x16x64xi8>, tensor<1x2x1x64xi8>, tensor<1x2x1x64xi8>
  return %s : tensor<1x2x1x64xi8>
}
