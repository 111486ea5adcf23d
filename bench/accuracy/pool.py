#!/usr/bin/env python3
"""Pools several ``stories260k.py --json`` runs (different ``--seed``s, same schemes): the mean
top-1 and KL of every scheme per run and over all runs, and the equal-bits comparison of
``stories260k.py`` on the pooled means. Every run weighs the same (same --seqs and --tokens).

usage: bench/accuracy/pool.py seed0.json seed1.json seed2.json
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stories260k import equal_bits_table  # noqa: E402


def main(paths):
    if len(paths) < 2:
        sys.exit(__doc__)
    runs = []
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        runs.append((data["args"]["seed"], {r["name"]: r for r in data["rows"]}))
    names = [n for n in runs[0][1] if all(n in rows for _, rows in runs)]
    seeds = ", ".join(str(s) for s, _ in runs)
    print(f"| scheme | bits/elem | " + " | ".join(f"seed {s} top-1 / KL" for s, _ in runs)
          + " | mean top-1 | mean KL |")
    print("| --- | --- | " + " | ".join("---" for _ in runs) + " | --- | --- |")
    pooled = []
    for n in names:
        rs = [rows[n] for _, rows in runs]
        row = dict(rs[0])
        row["top1"] = sum(r["top1"] for r in rs) / len(rs)
        row["kl"] = sum(r["kl"] for r in rs) / len(rs)
        pooled.append(row)
        cells = " | ".join(f"{100 * r['top1']:.1f}% / {r['kl']:.4f}" for r in rs)
        print(f"| {n} | {(row['k_bits'] + row['v_bits']) / 2:.3f} | {cells} | "
              f"{100 * row['top1']:.1f}% | {row['kl']:.4f} |")
    print(f"\nAt equal bits, means over seeds {seeds}:\n")
    print(equal_bits_table(pooled), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
