#!/usr/bin/env python3
"""Draws bench/e2e_decode.py's results as an SVG bar chart (no plotting library needed): per
shape, the qattn step (attention and append stacked) beside the best bf16 backend's step, with
the measured step ratio (bf16 step / qattn step) above each pair.

usage: plot_e2e.py RESULTS.json OUT.svg [--title TEXT]"""

import argparse
import json
import sys
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 760, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 60
COLORS = {"attention": "#3b6ea8", "append": "#9cc3e6", "bf16": "#c8823c"}


def nice_ceiling(x):
    """The smallest of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten at or above x."""
    step = 1.0
    while step * 10 <= x:
        step *= 10
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * step >= x:
            return m * step
    return 10 * step


def svg(rows, title):
    """rows: (shape, attention us, append us, qattn step us, bf16 name, bf16 step us)."""
    top = nice_ceiling(max(max(a + p, f) for _, a, p, _, _, f in rows) * 1.1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    y = lambda us: TOP + plot_h * (1 - us / top)  # noqa: E731
    slot = plot_w / len(rows)
    bar = slot * 0.32
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="13">'
           f'{escape(title)}</text>']
    for i in range(6):  # the us axis
        us = top * i / 5
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(us):.1f}" y2="{y(us):.1f}" '
                   f'stroke="#ddd"/><text x="{LEFT - 6}" y="{y(us) + 4:.1f}" '
                   f'text-anchor="end">{us:g}</text>')
    out.append(f'<text x="16" y="{TOP + plot_h / 2}" transform="rotate(-90 16 {TOP + plot_h / 2})"'
               ' text-anchor="middle">us per decode step</text>')

    def rect(x, lo, hi, color):
        out.append(f'<rect x="{x:.1f}" y="{y(hi):.1f}" width="{bar:.1f}" '
                   f'height="{y(lo) - y(hi):.1f}" fill="{color}"/>')

    for i, (shape, att, app, step, name, bf16) in enumerate(rows):
        x0 = LEFT + slot * i + slot * 0.16
        rect(x0, 0, att, COLORS["attention"])
        rect(x0, att, att + app, COLORS["append"])
        rect(x0 + bar, 0, bf16, COLORS["bf16"])
        out.append(f'<text x="{x0 + bar:.1f}" y="{y(max(att + app, bf16)) - 5:.1f}" '
                   f'text-anchor="middle">{bf16 / step:.2f}x</text>')
        out.append(f'<text x="{x0 + bar:.1f}" y="{HEIGHT - BOTTOM + 16}" '
                   f'text-anchor="middle">{escape(shape)}</text>')
        out.append(f'<text x="{x0 + bar:.1f}" y="{HEIGHT - BOTTOM + 30}" text-anchor="middle" '
                   f'fill="#666">{escape(name)}</text>')
    legend = [("qattn attention", COLORS["attention"]), ("qattn append", COLORS["append"]),
              ("bf16 best", COLORS["bf16"])]
    for i, (label, color) in enumerate(legend):
        x = LEFT + 10 + i * 150
        out.append(f'<rect x="{x}" y="{HEIGHT - 18}" width="12" height="12" fill="{color}"/>'
                   f'<text x="{x + 18}" y="{HEIGHT - 8}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(usage=__doc__.splitlines()[-1][7:])
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    data = json.load(open(a.results))
    rows = []
    for r in data["rows"]:
        best = r["bf16_best"]
        rows.append((r["shape"], r["qattn_attention_us"], r["qattn_append_us"],
                     r["qattn_step_us"], best, r["bf16"][best][0]))
    if not rows:
        sys.exit(f"plot_e2e: no rows in {a.results}")
    title = a.title or (f"{data['device']}: decode step of {data['layers']} layers, Hq "
                        f"{data['hq']}, Hkv {data['hkv']}, d {data['d']} (lower is better)")
    with open(a.out, "w") as f:
        f.write(svg(rows, title))
    print(f"wrote {a.out} ({len(rows)} shapes)")


if __name__ == "__main__":
    main()
