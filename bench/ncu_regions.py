#!/usr/bin/env python3
"""Where a kernel's warps spend their time, by region: reads the SASS source
CSVs that bench/gate_ncu.sh writes (Nsight Compute's source page) and sums
the warp stall samples and instructions of the code executed once per warp
before the key loop (prologue), after it (epilogue), and per step (every
instruction executed more often than once per warp: the loops), with the
prologue's and epilogue's main stall reasons.

usage: ncu_regions.py SOURCE_CSV [SOURCE_CSV...]
"""
import collections
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def rows(path):
    table = list(csv.reader(open(path)))
    head = next(i for i, r in enumerate(table) if r and r[0] == "Address")
    names = table[head]
    return names, [dict(zip(names, r)) for r in table[head + 1:] if len(r) == len(names)]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        names, code = rows(path)
        executed = [number(r[EXECUTED]) for r in code]
        warps = executed[0]  # the entry runs once per warp
        first_loop = next(i for i, e in enumerate(executed) if e > warps)
        region = collections.defaultdict(lambda: [0.0, 0, collections.Counter()])
        for i, (r, e) in enumerate(zip(code, executed)):
            # "partial": code only some warps run (the buffer's loop, exits).
            name = "loops" if e > warps else (
                "prologue" if e == warps and i < first_loop else
                "epilogue" if e == warps else "partial")
            region[name][0] += number(r[SAMPLES])
            region[name][1] += 1
            for n in names:
                if n.startswith("stall_") and "Not Issued" not in n:
                    region[name][2][n[6:]] += number(r[n])
        total = sum(v[0] for v in region.values())
        print(f"{path}: {int(total)} samples, {len(code)} instructions, {int(warps)} warps")
        for name in ("prologue", "loops", "epilogue", "partial"):
            samples, count, stalls = region[name]
            top = ", ".join(f"{k} {int(v)}" for k, v in stalls.most_common(3))
            print(f"  {name:9s} {int(samples):6d} samples ({samples / total:5.1%}), "
                  f"{count:4d} instructions; {top}")


if __name__ == "__main__":
    main()
