# RUN: rm -rf %t && %python %qattn_src/scripts/torch-check/prepare.py %t --target cpu --small
# RUN: %python %qattn_src/scripts/torch-check/test_ops.py %t --device cpu | FileCheck %s --check-prefix=OPS
# RUN: env QATTN_COMPILE=%t/no-such-qattn-compile %python %qattn_src/examples/decode_loop.py --artifacts %t --device cpu --min-agree 0.8 | FileCheck %s
# REQUIRES: torch
# scripts/torch-check.sh's two halves on the CPU, over cpu artifacts of the same functions
# (prepare.py --target cpu; the model a tiny one), so that a broken check script shows here and
# not on the GPU machine. test_ops.py: torch quantization bit-exact, every op case against
# float64, input validation, the torch-backend cache (the CUDA-only and torch.compile tests
# skip). The decode loop: bf16 attention against qattn.paged's 4-bit and mixed 2/4-bit caches
# (the prompt through cache.prefill, decode steps across a tail page filling), paged.decode's
# output checked against float64 attention of the dequantized cache, teacher-forced agreement
# at least 80% (exit 1 otherwise). Without qattn-compile, as on the GPU machine: the decode
# functions come from what prepare.py compiled into %t/cache.

# OPS: PASS quantize_bitexact
# OPS: PASS op_decode_4bit_buf_f32
# OPS: PASS op_prefill_mixed_bf16
# OPS: PASS validation_errors: 7 bad calls rejected
# OPS: PASS kv_cache_torch
# OPS: torch-check ops: {{[0-9]+}} passed, 0 failed

# CHECK: decode_loop: CPU
# CHECK: scheme attn/step
# CHECK-NEXT: bf16
# CHECK-NEXT: 4bit {{.*}} {{[0-9]+}}% {{ *}}{{same|diff@[1-9][0-9]*}}
# CHECK-NEXT: mixed {{.*}} {{[0-9]+}}% {{ *}}{{same|diff@[1-9][0-9]*}}
# CHECK: check 4bit: layer 0 at length 81 (64 in pages, 17 in the tail): {{.*}} OK
# CHECK: check 4bit: layer 0 at length 108 (64 in pages, 44 in the tail): {{.*}} OK
# CHECK: check 4bit: layer 0 at length 128 (128 in pages, 0 in the tail): {{.*}} OK
# CHECK: check 4bit: layer 0 at length 129 (128 in pages, 1 in the tail): {{.*}} OK
# CHECK: check 4bit: layer 0 at length 136 (128 in pages, 8 in the tail): {{.*}} OK
# CHECK: 4bit: Scheme(bits=(4,), {{.*}} as PagedKVCache, KV head bits 4/4: 160.5 B/token vs 512 bf16
# CHECK-COUNT-5: check mixed: {{.*}} OK
# CHECK: mixed: Scheme(bits=(4, 2), {{.*}} as PagedKVCache, KV head bits 4/2: 128.5 B/token
