"""A raised attention against the unquantized program it was raised from.

qattn-run ran the same function twice on the same seed: once compiled from the original linalg
program (softmax decomposed by the upstream transform, everything else as written: f32 math, no
quantization) into --original, once after qattn-raise-attention into --raised. Checks:
  (0) both runs saw the same generated q, k, v (bit-exact);
  (1) the original program against a float64 NumPy attention written from the program's own
      semantics (--scale, --causal-offset, GQA by repeating KV heads), independent of qattn's
      model: rel_fro <= 1e-5 (f32 sums over <= 1000 terms);
  (2) the raised program against the original's output: rel_fro <= --max-rel-fro and SQNR >=
      --min-sqnr (quantization noise of the scheme the pass was given);
  (3) the raised program against the float64 attention, with the same bounds.
"""

import numpy as np

import qcheck

p = qcheck.parser(__doc__)
p.add_argument("--original", required=True, help="qattn-run --output-dir of the original")
p.add_argument("--raised", required=True, help="qattn-run --output-dir of the raised program")
p.add_argument("--scale", type=float, required=True, help="the original's softmax scale")
p.add_argument("--causal-offset", type=int,
               help="the original's mask: query i sees keys j <= i + OFFSET (none: no mask)")
p.add_argument("--max-rel-fro", type=float, required=True)
p.add_argument("--min-sqnr", type=float, required=True)
a = p.parse_args()
c = qcheck.Checker(a.case)

for name in ("q", "k", "v"):
    c.exact(f"same generated {name}", qcheck.load(a.raised, name), qcheck.load(a.original, name))

q, k, v = (qcheck.load(a.original, n).astype(np.float64) for n in ("q", "k", "v"))
original = qcheck.load(a.original, "o").astype(np.float64)
raised = qcheck.load(a.raised, "o").astype(np.float64)

groups = q.shape[1] // k.shape[1]
scores = a.scale * np.einsum("bhic,bhjc->bhij", q, np.repeat(k, groups, axis=1))
if a.causal_offset is not None:
    i = np.arange(q.shape[2])[:, None]
    j = np.arange(k.shape[2])[None, :]
    scores = np.where(j <= i + a.causal_offset, scores, -np.inf)
weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
weights /= weights.sum(axis=-1, keepdims=True)
reference = np.einsum("bhij,bhjc->bhic", weights, np.repeat(v, groups, axis=1))


def compare(what, got, want, max_rel, min_sqnr):
    max_abs, rel, sqnr = qcheck.metrics(got, want)
    c.line(rel <= max_rel and sqnr >= min_sqnr, what,
           f"max_abs={max_abs:.3e} rel_fro={rel:.4f} (<= {max_rel}) sqnr={sqnr:.1f} dB "
           f"(>= {min_sqnr})")


compare("original program vs float64 attention", original, reference, 1e-5, 100.0)
compare("raised vs original program", raised, original, a.max_rel_fro, a.min_sqnr)
compare("raised vs float64 attention", raised, reference, a.max_rel_fro, a.min_sqnr)
c.finish()
