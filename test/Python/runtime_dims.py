# RUN: rm -rf %t && %python %s %t %S/../Target/cpu-artifact-dims.mlir | FileCheck %s
# REQUIRES: numpy
"""qattn.runtime on functions of dynamically shaped tensors: one compiled artifact
(test/Target/cpu-artifact-dims.mlir) called on NumPy arrays of two batch sizes and cache
lengths, whose results it allocates with the shapes the arguments bind, checked against NumPy;
Function.result_shapes; and the errors of symbols given two sizes."""

import os
import sys

import numpy as np

from qattn.compiler import compile_module
from qattn.runtime import Artifact, QAttnRuntimeError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import expect  # noqa: E402

out, source = sys.argv[1:]
with open(source) as f:
    art = Artifact(compile_module(f.read(), os.path.join(out, "art")))
scores, add_bias = art["scores"], art["add_bias"]
print(scores.signature())
# CHECK: scores(q: f32 [B, 2, 16], k: f32 [B, 2, N, 16]) -> (s: f32 [B, 2, N])
print(add_bias.signature(), add_bias.args[0].is_static, add_bias.args[1].is_static)
# CHECK: add_bias(x: f32 [B, 8], bias: f32 [8]) -> (result0: f32 [B, 8]) False True
print(scores.result_shapes((3, 2, 16), (3, 2, 40, 16)))
# CHECK: [(3, 2, 40)]

rng = np.random.default_rng(1)
for b, n in [(1, 5), (4, 33)]:
    q = rng.standard_normal((b, 2, 16)).astype(np.float32)
    k = rng.standard_normal((b, 2, n, 16)).astype(np.float32)
    (s,) = scores(q, k)
    expected = np.einsum("bhd,bhnd->bhn", q.astype(np.float64), k.astype(np.float64))
    err = np.abs(s - expected).max() / np.abs(expected).max()
    assert s.dtype == np.float32 and err < 1e-6, err
    x = rng.standard_normal((b, 8)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    y = np.empty((b, 8), np.float32)
    add_bias(x, bias, out=[y])
    assert np.array_equal(y, x + bias)
    print(f"B={b} N={n}: s {list(s.shape)} ok, add_bias ok")
# CHECK: B=1 N=5: s [1, 2, 5] ok, add_bias ok
# CHECK: B=4 N=33: s [4, 2, 33] ok, add_bias ok

q2 = np.zeros((2, 2, 16), np.float32)
expect(QAttnRuntimeError, lambda: scores(q2, np.zeros((3, 2, 5, 16), np.float32)))
# CHECK: QAttnRuntimeError: argument "k" of function "scores": dimension 0 (B) is 3, but B = 2 from argument "q"
expect(QAttnRuntimeError, lambda: scores.result_shapes((2, 2, 16), (3, 2, 5, 16)))
# CHECK: QAttnRuntimeError: argument "k" of function "scores": dimension 0 (B) is 3, but B = 2 from argument "q"
# reserve checks the shapes (a cpu function has no scratch to size) with the same errors.
scores.reserve((3, 2, 16), (3, 2, 40, 16))
print("reserve ok")
# CHECK: reserve ok
expect(QAttnRuntimeError, lambda: scores.reserve((2, 2, 16), (3, 2, 5, 16)))
# CHECK: QAttnRuntimeError: argument "k" of function "scores": dimension 0 (B) is 3, but B = 2 from argument "q"
expect(ValueError, lambda: scores(q2, np.zeros((2, 2, 5, 8), np.float32)))
# CHECK: ValueError: argument 'k' of scores: expected shape [B, 2, N, 16], got [2, 2, 5, 8]
expect(QAttnRuntimeError, lambda: add_bias(np.zeros((0, 8), np.float32), np.zeros(8, np.float32)))
# CHECK: QAttnRuntimeError: argument "x" of function "add_bias": dimension 0 (B) is 0; a symbolic size must be at least 1
expect(QAttnRuntimeError, lambda: add_bias(np.zeros((2, 8), np.float32), np.zeros(8, np.float32),
                                           out=[np.zeros((3, 8), np.float32)]))
# CHECK: QAttnRuntimeError: result "result0" of function "add_bias": dimension 0 (B) is 3, but B = 2 from argument "x"
expect(ValueError, lambda: scores.results[0].nbytes)
# CHECK: ValueError: s: shape [B, 2, N] has symbolic sizes
