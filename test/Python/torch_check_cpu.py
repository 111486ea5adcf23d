# RUN: rm -rf %t && %python %qattn_src/scripts/torch-check/prepare.py %t --target cpu --small
# RUN: %python %qattn_src/scripts/torch-check/test_ops.py %t --device cpu | FileCheck %s --check-prefix=OPS
# RUN: %python %qattn_src/examples/decode_loop.py --artifacts %t --device cpu | FileCheck %s
# REQUIRES: torch
# scripts/torch-check.sh's two halves on the CPU, over cpu artifacts of the same functions
# (prepare.py --target cpu; the model a tiny one), so that a broken check script shows here and
# not on the GPU machine. test_ops.py: torch quantization bit-exact, every op case against
# float64, input validation, the torch-backend cache (the CUDA-only and torch.compile tests
# skip). The decode loop: bf16
# attention against qattn 4-bit and mixed 2/4-bit KV caches (prefill with BPQ int8 queries,
# decode steps across a flush of the decode buffer), the kernels' output checked against
# float64 attention of the dequantized cache. The GPU run is scripts/torch-check.sh.

# OPS: PASS quantize_bitexact
# OPS: PASS op_decode_4bit_buf_f32
# OPS: PASS op_prefill_mixed_bf16
# OPS: PASS validation_errors: 7 bad calls rejected
# OPS: PASS kv_cache_torch
# OPS: torch-check ops: {{[0-9]+}} passed, 0 failed

# CHECK: decode_loop: CPU
# CHECK: scheme attn/step
# CHECK-NEXT: bf16
# CHECK-NEXT: 4bit
# CHECK-NEXT: mixed
# CHECK: check 4bit: layer 0 at position 16 (cache 16 + buffer 1): {{.*}} OK
# CHECK: check 4bit: layer 0 at position 24 (cache 24 + buffer 1): {{.*}} OK
# CHECK: check 4bit: layer 0 at position 25 (cache 24 + buffer 2): {{.*}} OK
# CHECK: 4bit: 2 layers x 2 KV heads x d 32, bits {{\[\[4, 4\]\]}}{{.*}}1 flushes per layer
# CHECK: check mixed: {{.*}} OK
# CHECK: check mixed: {{.*}} OK
# CHECK: check mixed: {{.*}} OK
# CHECK: mixed: 2 layers x 2 KV heads x d 32, bits {{\[\[4, 2\]\]}}
