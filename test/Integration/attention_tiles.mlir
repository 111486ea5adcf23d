// attention.mlir's functions through the tile layer with static shapes
// (qattn-tile=tile-layer=all: the decode grid over 16-row tiles of (query, head) pairs, up to 10
// row tiles of a 37-query causal prefill here, the split heuristic's key splits, 2-stage
// pipelined key loops), lowered to the CPU and checked against the NumPy model with the same
// seeds and bounds as attention.mlir; its SAS functions (one split, two passes) too.

// REQUIRES: numpy
// RUN: rm -rf %t && mkdir -p %t
// RUN: qattn-opt %S/attention.mlir --qattn-tile=tile-layer=all --qattn-pipeline=num-stages=2 -o %t/tiled.mlir
// RUN: FileCheck %s --check-prefix=IR --input-file=%t/tiled.mlir
// RUN: qattn-compile %t/tiled.mlir -o %t/art
// RUN: qattn-run %t/art --function a4_d64_gqa --seed 31 --dist normal --output-dir %t/a4_d64_gqa
// RUN: %python %S/Inputs/check_attention.py --case tiled_a4_d64_gqa --art %t/art --function a4_d64_gqa --out %t/a4_d64_gqa --q '' --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --causal --max-rel-fro 0.15 --min-sqnr 16.5 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/art --function a8_d128_bf16 --seed 34 --dist normal --output-dir %t/a8_d128_bf16
// RUN: %python %S/Inputs/check_attention.py --case tiled_a8_d128_bf16 --art %t/art --function a8_d128_bf16 --out %t/a8_d128_bf16 --q 'block=16,scale=f16' --k block=16,gran=channel --v block=32 --causal --max-rel-fro 0.02 --min-sqnr 34 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/art --function a4k8v_decode --seed 35 --dist uniform --output-dir %t/a4k8v_decode
// RUN: %python %S/Inputs/check_attention.py --case tiled_a4k8v_decode --art %t/art --function a4k8v_decode --out %t/a4k8v_decode --q '' --k block=32,bits=4,group=8 --v block=32 --max-rel-fro 0.03 --min-sqnr 30.4 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/art --function a42_d128_int8q --seed 36 --dist outlier --random q=normal --random v=normal --output-dir %t/a42_d128_int8q
// RUN: %python %S/Inputs/check_attention.py --case tiled_a42_d128_int8q --art %t/art --function a42_d128_int8q --out %t/a42_d128_int8q --q 'block=64,gran=channel' --k block=64,bits=4,group=16 --v block=64,bits=2,group=16 --causal --max-rel-fro 0.5 --min-sqnr 6.0 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/art --function a3min_decode --seed 37 --dist normal --output-dir %t/a3min_decode
// RUN: %python %S/Inputs/check_attention.py --case tiled_a3min_decode --art %t/art --function a3min_decode --out %t/a3min_decode --q '' --k block=32,bits=3,group=8,anchor=min --v block=32,bits=2,group=16,order=msb,anchor=min --max-rel-fro 0.5 --min-sqnr 6.0 | FileCheck %s --check-prefix=OK

// RUN: qattn-run %t/art --function a2_d128_sas_f16 --seed 32 --dist normal --output-dir %t/a2_d128_sas_f16
// RUN: %python %S/Inputs/check_attention.py --case tiled_a2_d128_sas_f16 --art %t/art --function a2_d128_sas_f16 --out %t/a2_d128_sas_f16 --q 'block=16' --k block=32,scale=f16,gran=channel,bits=2,group=32 --v block=32,scale=f16,bits=2,group=8,order=msb --softmax sas:-6.0:3 --max-rel-fro 0.65 --min-sqnr 3.7 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/art --function amixed_d64 --seed 33 --dist normal --random k=outlier --random q=uniform --output-dir %t/amixed_d64
// RUN: %python %S/Inputs/check_attention.py --case tiled_amixed_d64 --art %t/art --function amixed_d64 --out %t/amixed_d64 --q '' --k block=64,bits=4-2-3-4,group=16 --v block=64,bits=2-4-4-3,group=32,order=msb --causal --softmax sas:-8.0:2 --scale 0.1 --max-rel-fro 0.55 --min-sqnr 5.2 | FileCheck %s --check-prefix=OK

// qattn-pipeline's static slots (each 2-stage key loop unrolled by 2, its
// tiles' ring slots fixed): the same functions within the same bounds.
// RUN: qattn-opt %S/attention.mlir --qattn-tile=tile-layer=all '--qattn-pipeline=num-stages=2 static-slots=true' -o %t/static.mlir
// RUN: FileCheck %s --check-prefix=STATIC --input-file=%t/static.mlir
// RUN: qattn-compile %t/static.mlir -o %t/static
// RUN: qattn-run %t/static --function a4_d64_gqa --seed 31 --dist normal --output-dir %t/static_a4_d64_gqa
// RUN: %python %S/Inputs/check_attention.py --case static_a4_d64_gqa --art %t/static --function a4_d64_gqa --out %t/static_a4_d64_gqa --q '' --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --causal --max-rel-fro 0.15 --min-sqnr 16.5 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/static --function a8_d128_bf16 --seed 34 --dist normal --output-dir %t/static_a8_d128_bf16
// RUN: %python %S/Inputs/check_attention.py --case static_a8_d128_bf16 --art %t/static --function a8_d128_bf16 --out %t/static_a8_d128_bf16 --q 'block=16,scale=f16' --k block=16,gran=channel --v block=32 --causal --max-rel-fro 0.02 --min-sqnr 34 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/static --function a4k8v_decode --seed 35 --dist uniform --output-dir %t/static_a4k8v_decode
// RUN: %python %S/Inputs/check_attention.py --case static_a4k8v_decode --art %t/static --function a4k8v_decode --out %t/static_a4k8v_decode --q '' --k block=32,bits=4,group=8 --v block=32 --max-rel-fro 0.03 --min-sqnr 30.4 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/static --function a42_d128_int8q --seed 36 --dist outlier --random q=normal --random v=normal --output-dir %t/static_a42_d128_int8q
// RUN: %python %S/Inputs/check_attention.py --case static_a42_d128_int8q --art %t/static --function a42_d128_int8q --out %t/static_a42_d128_int8q --q 'block=64,gran=channel' --k block=64,bits=4,group=16 --v block=64,bits=2,group=16 --causal --max-rel-fro 0.5 --min-sqnr 6.0 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/static --function a3min_decode --seed 37 --dist normal --output-dir %t/static_a3min_decode
// RUN: %python %S/Inputs/check_attention.py --case static_a3min_decode --art %t/static --function a3min_decode --out %t/static_a3min_decode --q '' --k block=32,bits=3,group=8,anchor=min --v block=32,bits=2,group=16,order=msb,anchor=min --max-rel-fro 0.5 --min-sqnr 6.0 | FileCheck %s --check-prefix=OK
// STATIC: qattn.wait_tiles {{.*}} {pending = 1 : i64, qattn.ring_slot = 0 : i64}
// STATIC: qattn.wait_tiles {{.*}} {pending = 1 : i64, qattn.ring_slot = 1 : i64}

// The lazy max at a bar of 0.25 (most tiles move some rows, others not):
// the same softmax, within the same bounds.
// RUN: qattn-opt %S/attention.mlir --qattn-tile='tile-layer=all lazy-max=0.25' --qattn-pipeline=num-stages=2 -o %t/lazy.mlir
// RUN: FileCheck %s --check-prefix=LAZY --input-file=%t/lazy.mlir
// RUN: qattn-compile %t/lazy.mlir -o %t/lazy
// RUN: qattn-run %t/lazy --function a8_d128_bf16 --seed 34 --dist normal --output-dir %t/lazy_a8_d128_bf16
// RUN: %python %S/Inputs/check_attention.py --case lazy_a8_d128_bf16 --art %t/lazy --function a8_d128_bf16 --out %t/lazy_a8_d128_bf16 --q 'block=16,scale=f16' --k block=16,gran=channel --v block=32 --causal --max-rel-fro 0.02 --min-sqnr 34 | FileCheck %s --check-prefix=OK
// RUN: qattn-run %t/lazy --function a42_d128_int8q --seed 36 --dist outlier --random q=normal --random v=normal --output-dir %t/lazy_a42_d128_int8q
// RUN: %python %S/Inputs/check_attention.py --case lazy_a42_d128_int8q --art %t/lazy --function a42_d128_int8q --out %t/lazy_a42_d128_int8q --q 'block=64,gran=channel' --k block=64,bits=4,group=16 --v block=64,bits=2,group=16 --causal --max-rel-fro 0.5 --min-sqnr 6.0 | FileCheck %s --check-prefix=OK
// LAZY-LABEL: func.func @a8_d128_bf16
// LAZY: qattn.softmax_update {{.*}} {lazy_max = 2.500000e-01 : f32}

// IR-LABEL: func.func @a4_d64_gqa
// IR: scf.forall ({{.*}}) in (1, 1, 10, {{[0-9]+}})
// IR: qattn.combine_splits
// SAS: one key split, a first pass for each row's final max, then the terms against it.
// IR-LABEL: func.func @a2_d128_sas_f16
// IR: scf.forall ({{.*}}) in (1, 4, 2, 1)
// IR: qattn.tile_row_max
// IR: } {qattn.key_loop, qattn.pipeline_stages = 2 : i64}
// IR: qattn.softmax_update {{.*}} {fixed_max, softmax = #qattn.softmax<sas, threshold = -6.000000e+00, degree = 3>}
// IR-NOT: qattn.attention
// OK: all checks passed

