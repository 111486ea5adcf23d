#!/usr/bin/env python3
"""qattn.key_chunk on the CPU against its rule, written out again here.

usage: check_chunks.py make DIR NAME K L0,L1,...   writes DIR/NAME_lens.npy, DIR/NAME_k.npy
       check_chunks.py check DIR NAME OUT.npy       checks a [256, 3] (seq, lo, hi) per slot

The size C is the fewest whole tiles (T = 32 keys) whose chunk count
sum_b ceil(L_b / C) is at most K, found here by walking up from
T ceil(W / (K T)) one tile at a time (the lowering bisects); sequence b's
chunks take slots o_b, o_b + 1, ... in order; slots past the last chunk are
(0, 0, 0).
"""
import sys

import numpy as np

T, SLOTS = 32, 256


def expected(lens, k):
    w = int(lens.sum())
    count = lambda c: sum(-(-int(n) // c) for n in lens)
    c = T * max(1, -(-w // (max(1, k) * T)))
    while count(c) > k:
        c += T
    want, slot = np.zeros((SLOTS, 3), np.int64), 0
    for b, n in enumerate(lens):
        for j in range(-(-int(n) // c)):
            if slot < SLOTS:
                want[slot] = (b, j * c, min((j + 1) * c, int(n)))
            slot += 1
    return c, slot, want


def main():
    mode, folder, name = sys.argv[1:4]
    if mode == "make":
        k, lens = int(sys.argv[4]), [int(x) for x in sys.argv[5].split(",")]
        np.save(f"{folder}/{name}_lens.npy", np.array(lens, np.int32))
        np.save(f"{folder}/{name}_k.npy", np.array([k], np.int32))
        return 0
    lens = np.load(f"{folder}/{name}_lens.npy").astype(np.int64)
    k = int(np.load(f"{folder}/{name}_k.npy")[0])
    out = np.load(sys.argv[4]).astype(np.int64)
    c, chunks, want = expected(lens, k)
    bad = np.argwhere((out != want).any(axis=1)).ravel()
    print(f"{name}: B={len(lens)} W={int(lens.sum())} K={k} C={c} chunks={chunks}:",
          "OK" if not len(bad) and chunks <= k else
          f"FAIL slots {bad.tolist()[:8]} got {out[bad][:8].tolist()} want {want[bad][:8].tolist()}")
    return 1 if len(bad) or chunks > k else 0


if __name__ == "__main__":
    sys.exit(main())
