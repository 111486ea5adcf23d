"""An attention compiled unquantized (qattn-compile --allow-unquantized) against float64.

qattn-run wrote the generated q, k, v and the result o of one function into --run. The result
must be softmax(scale * q k^T + mask) v computed in float64 from those arguments, to f32
rounding: rel_fro <= 1e-5 (sums over at most a few hundred terms). Any leading dims are batch
dims; the mask, with --causal-offset, hides key j from query i when j > i + OFFSET.
"""

import numpy as np

import qcheck

p = qcheck.parser(__doc__)
p.add_argument("--run", required=True, help="qattn-run --output-dir of the function")
p.add_argument("--scale", type=float, required=True, help="the program's softmax scale")
p.add_argument("--causal-offset", type=int,
               help="the program's mask: query i sees keys j <= i + OFFSET (none: no mask)")
a = p.parse_args()
c = qcheck.Checker(a.case)

q, k, v, out = (qcheck.load(a.run, n).astype(np.float64) for n in ("q", "k", "v", "o"))
scores = a.scale * np.einsum("...ic,...jc->...ij", q, k)
if a.causal_offset is not None:
    i = np.arange(q.shape[-2])[:, None]
    j = np.arange(k.shape[-2])[None, :]
    scores = np.where(j <= i + a.causal_offset, scores, -np.inf)
weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
weights /= weights.sum(axis=-1, keepdims=True)
reference = np.einsum("...ij,...jc->...ic", weights, v)

max_abs, rel, sqnr = qcheck.metrics(out, reference)
c.line(rel <= 1e-5, "float program vs float64 attention",
       f"max_abs={max_abs:.3e} rel_fro={rel:.2e} (<= 1e-5) sqnr={sqnr:.1f} dB")
c.finish()
