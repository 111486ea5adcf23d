# RUN: rm -rf %t && %python %qattn_src/scripts/torch-check/prepare.py %t --target cpu --small --no-ops
# RUN: %python %qattn_src/examples/decode_loop.py --artifacts %t --device cpu | FileCheck %s
# REQUIRES: torch
# The GPU example's decode loop, run on the CPU over cpu artifacts of a tiny model: bf16
# attention against qattn 4-bit and mixed 2/4-bit KV caches (prefill with BPQ int8 queries,
# decode steps across a flush of the decode buffer), the kernels' output checked against
# float64 attention of the dequantized cache. The GPU run is scripts/torch-check.sh.

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
