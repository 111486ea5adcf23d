#!/usr/bin/env python3
"""The decode speed gate of two trees in one call: bench/decode_gate.py run on
folder A, then on folder B, one round each, for --rounds rounds (A, B, A, B,
...), so that clock and thermal drift fall on both alike; then per row the
static kernel's time (the median of every run's static median: both folders
time the same static column), A's and B's serving times per round, B / A, and
each against the static column, with the gate's verdict (<= 1.03) for each.

  decode_gate_ab.py A B QATTN_RUN WORK [--rounds N] [--only SUBSTR[,..]] [--repeat N]

A and B are folders written by `decode_gate.py prepare` (e.g. the previous
tree's and this tree's, each with the same --static-compile); they must hold
the same rows. Each run's log and gate.json go to WORK/<A|B>_r<round>/; the
comparison is printed as a markdown table and written to WORK/ab.json (the
format of bench/results/decode_gate_one_pass_combine.json). Exit 1 if a run
failed or a row failed its output check in either folder.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PASS_RATIO = 1.03


def run_gate(folder, qattn_run, work, a):
    cmd = [sys.executable, os.path.join(HERE, "decode_gate.py"), "run", folder, qattn_run, work,
           "--rounds", "1", "--repeat", str(a.repeat)]
    if a.only:
        cmd += ["--only", a.only]
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "run.log"), "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
    path = os.path.join(work, "gate.json")
    if rc or not os.path.exists(path):
        sys.exit(f"decode_gate_ab.py: decode_gate.py run {folder} failed (exit {rc}); "
                 f"see {work}/run.log")
    with open(path) as f:
        return json.load(f)


def us(result, column):
    return result.get(column, {}).get("median_us")


def compare(gates_a, gates_b):
    """Rows of the comparison: name -> the times and ratios (None where a run
    has no time for that column)."""
    names = [r["name"] for r in gates_a[0]["rows"]]
    for g in gates_a + gates_b:
        if [r["name"] for r in g["rows"]] != names:
            sys.exit("decode_gate_ab.py: A and B hold different rows")
    rows, failed = {}, []
    for i, name in enumerate(names):
        runs_a = [g["rows"][i] for g in gates_a]
        runs_b = [g["rows"][i] for g in gates_b]
        if any("error" in r for r in runs_a + runs_b):
            failed.append(name)
        static = [t for t in (us(r, "static") for r in runs_a + runs_b) if t]
        a = [us(r, "serving") for r in runs_a]
        b = [us(r, "serving") for r in runs_b]
        row = {"static_us": static, "a_serving_us": a, "b_serving_us": b}
        if static and all(a) and all(b):
            s = statistics.median(static)
            row.update(static_median_us=s, b_over_a=statistics.mean(b) / statistics.mean(a),
                       a_over_static=statistics.mean(a) / s,
                       b_over_static=statistics.mean(b) / s)
        rows[name] = row
    return rows, failed


def table(rows, label_a, label_b):
    def times(ts):
        return " / ".join(f"{t:.1f}" if t else "-" for t in ts)
    print(f"| shape | static us | serving us, {label_a} | serving us, {label_b} | B / A "
          f"| A / static | B / static |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        if "b_over_a" not in r:
            print(f"| {name} | {times(r['static_us'])} | {times(r['a_serving_us'])} "
                  f"| {times(r['b_serving_us'])} | | | |")
            continue
        verdict = [f"{x:.3f}" + ("" if x <= PASS_RATIO else " (miss)")
                   for x in (r["a_over_static"], r["b_over_static"])]
        print(f"| {name} | {r['static_median_us']:.1f} | {times(r['a_serving_us'])} "
              f"| {times(r['b_serving_us'])} | {r['b_over_a']:.3f} | {verdict[0]} "
              f"| {verdict[1]} |")
    timed = [r for r in rows.values() if "b_over_a" in r]
    passing = {k: sum(r[k] <= PASS_RATIO for r in timed) for k in ("a_over_static",
                                                                    "b_over_static")}
    print(f"rows within {PASS_RATIO} of the static column: A {passing['a_over_static']}, "
          f"B {passing['b_over_static']} of {len(rows)}")
    return passing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="decode_gate.py prepare folder A (e.g. the previous tree's)")
    ap.add_argument("b", help="decode_gate.py prepare folder B (e.g. this tree's)")
    ap.add_argument("qattn_run")
    ap.add_argument("work")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each folder, alternating")
    ap.add_argument("--only", default="", help="rows whose name contains one of these "
                    "(comma-separated); 'varlen' selects the varlen batch")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per qattn-run")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("decode_gate_ab.py: --rounds must be at least 1")
    for folder in (a.a, a.b):
        if not os.path.exists(os.path.join(folder, "plan.json")):
            sys.exit(f"decode_gate_ab.py: {folder}/plan.json not found (decode_gate.py prepare "
                     f"writes it)")
    gates = {"A": [], "B": []}
    for r in range(1, a.rounds + 1):
        for key, folder in (("A", a.a), ("B", a.b)):
            print(f"round {r}: {key} = {folder}", flush=True)
            gates[key].append(run_gate(folder, a.qattn_run,
                                       os.path.join(a.work, f"{key}_r{r}"), a))
    rows, failed = compare(gates["A"], gates["B"])
    print()
    passing = table(rows, "A", "B")
    varlen = {k: [g["varlen"]["serving"].get("median_us") for g in gates[k]
                  if g.get("varlen") and g["varlen"].get("serving")] for k in gates}
    if varlen["A"] or varlen["B"]:
        print(f"varlen serving us: A {varlen['A']}, B {varlen['B']}")
    out = {"what": f"decode_gate.py run of A ({a.a}) and B ({a.b}) alternating, one round of "
                   f"{a.repeat} calls each, {a.rounds} times; static = the median of every "
                   f"run's static median",
           "command": " ".join(sys.argv), "gpu": gates["A"][0].get("gpu", ""),
           "date": gates["B"][-1].get("date", ""), "rows": rows, "varlen_us": varlen,
           "passing_rows": {"a": passing["a_over_static"], "b": passing["b_over_static"]}}
    with open(os.path.join(a.work, "ab.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.work}/ab.json")
    if failed:
        print(f"decode_gate_ab.py: failed rows: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
