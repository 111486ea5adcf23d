"""After `python3 -m qattn.precompile` filled $QATTN_CACHE_DIR: qattn.paged.decode runs the
precompiled functions (one query f32, two queries f32 causal) on a CPU cache without compiling
anything more, and their outputs are finite and shaped like the queries."""
import os

import numpy as np
import torch

from qattn import paged

root = os.path.join(os.environ["QATTN_CACHE_DIR"], "paged")
before = sorted(os.listdir(root))
rng = np.random.default_rng(7)
cache = paged.PagedKVCache(None, 1, 8, 64, 2, 64, max_batch=2)
k, v = (torch.from_numpy(rng.standard_normal((2, 2, 100, 64)).astype(np.float32))
        for _ in range(2))
table = torch.tensor([[3, 1], [0, 5]], dtype=torch.int32)
cache.prefill(0, k, v, table)
lens = torch.tensor([100, 100], dtype=torch.int32)
for shape in ((2, 4, 64), (2, 2, 4, 64)):
    q = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    out = paged.decode(q, cache, 0, table, lens)
    assert out.shape == q.shape and torch.isfinite(out).all(), (shape, out.shape)
after = sorted(os.listdir(root))
assert after == before, (before, after)
print(f"decode ran {len(before)} precompiled functions, compiled {len(after) - len(before)} more")
