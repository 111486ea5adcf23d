"""Compiles the paged decode functions that ``qattn.paged.decode`` runs, ahead of time, into the
disk cache (``$QATTN_CACHE_DIR`` or ``--cache-dir``), so that an inference engine's first step
compiles nothing and a GPU machine without MLIR finds them (carry the cache folder over).

One function serves every batch, length, pool and table width; one is compiled per scheme, head
counts, head dim, page size, queries per sequence, query dtype, causality and scale, exactly as
``decode`` would ask for it (``qattn.paged.precompile``). Each line of output names a function
and the artifact folder it went to.

  python3 -m qattn.precompile --hq 32 --hkv 8 --head-dim 128 --dtype bf16
  python3 -m qattn.precompile --hq 32 --hkv 8 --head-dim 128 --num-queries 1,4 \\
      --scheme 'bits=2-4-2-4-2-4-2-4,group=16,block=64,anchor=min,fit=mse' --cache-dir cache/

A scheme is ``key=value`` pairs separated by commas, the fields of ``qattn.ir.Scheme``: ``bits``
(``4``, per KV head ``2-4-..``, or ``8`` for int8 without stage 2), ``group``, ``block``,
``order``, ``anchor``, ``fit``; unnamed fields keep ``qattn.paged.DEFAULT_SCHEME``'s values.
Exit status 0 when every function compiled, 1 when one failed (its diagnostic on stderr), 2 for
bad arguments.
"""

import argparse
import os
import sys
import time

_FIELDS = {"bits", "group", "block", "order", "anchor", "fit"}
_DTYPES = ("f32", "f16", "bf16")


def parse_scheme(spec, default):
    """A ``qattn.ir.Scheme`` from ``key=value,..`` (``ValueError`` naming what is wrong), the
    fields it leaves out from ``default``."""
    from qattn import ir

    fields = {f: getattr(default, f) for f in _FIELDS}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in _FIELDS:
            raise ValueError(f"expected key=value with a key among {', '.join(sorted(_FIELDS))}, "
                             f"got {item!r}")
        if key == "bits":
            try:
                widths = tuple(int(b) for b in value.split("-"))
            except ValueError:
                raise ValueError(f"bits: expected W or W-W-.. (per KV head), got {value!r}")
            fields["bits"] = () if widths == (8,) else widths
        elif key in ("group", "block"):
            try:
                fields[key] = int(value)
            except ValueError:
                raise ValueError(f"{key}: expected an integer, got {value!r}")
        else:
            fields[key] = value
    return ir.Scheme(**fields)


def _ints(text, what):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: expected integers separated by commas, got "
                                         f"{text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{what}: expected positive integers, got {text!r}")
    return values


def _dtypes(text):
    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in _DTYPES]
    if not values or bad:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(_DTYPES)} separated by "
                                         f"commas, got {text!r}")
    return values


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python3 -m qattn.precompile",
        description="Compiles qattn.paged's decode functions into the disk cache ahead of time.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--hq", type=int, required=True, help="query heads")
    ap.add_argument("--hkv", type=int, required=True, help="KV heads (divides --hq)")
    ap.add_argument("--head-dim", type=int, required=True, help="head dimension d")
    ap.add_argument("--page-size", type=int, default=64, help="tokens per page")
    ap.add_argument("--scheme", default="", help="K's scheme, key=value,.. (default: "
                    "qattn.paged.DEFAULT_SCHEME, 4-bit g16, grid at the group minimum, mse fit)")
    ap.add_argument("--v-scheme", default=None, help="V's scheme (default: K's)")
    ap.add_argument("--num-queries", type=lambda s: _ints(s, "--num-queries"), default=[1],
                    help="queries per sequence, comma-separated (speculative decode: 1,4)")
    ap.add_argument("--dtype", type=_dtypes, default=["bf16"],
                    help="the queries' dtypes, comma-separated")
    ap.add_argument("--no-causal", dest="causal", action="store_false",
                    help="with several queries, let every query see every key")
    ap.add_argument("--scale", type=float, default=None, help="softmax scale (1/sqrt(d))")
    ap.add_argument("--target", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--cache-dir", default=None, help="the disk cache ($QATTN_CACHE_DIR, else "
                    "~/.cache/qattn)")
    a = ap.parse_args(argv)

    if a.cache_dir:
        os.environ["QATTN_CACHE_DIR"] = a.cache_dir
    from qattn import compiler, paged

    def fail(message):
        print(f"qattn.precompile: error: {message}", file=sys.stderr)
        return 2

    try:
        scheme = parse_scheme(a.scheme, paged.DEFAULT_SCHEME)
        v_scheme = scheme if a.v_scheme is None else parse_scheme(a.v_scheme, scheme)
    except ValueError as e:
        return fail(f"scheme: {e}")
    if a.hq < 1 or a.hkv < 1 or a.hq % a.hkv:
        return fail(f"--hq ({a.hq}) must be a positive multiple of --hkv ({a.hkv})")
    try:
        # Sizes do not enter the function: the smallest cache stands in for the engine's.
        cache = paged.PagedKVCache(scheme, 1, 1, a.page_size, a.hkv, a.head_dim, max_batch=1,
                                   v_scheme=v_scheme, device="cpu")
    except (TypeError, ValueError) as e:
        return fail(str(e))

    dtypes = {name: dtype for dtype, name in paged._Q_DTYPES.items()}
    jobs = [(nq, dt) for nq in a.num_queries for dt in a.dtype]
    status = 0
    for i, (nq, dt) in enumerate(jobs, 1):
        what = (f"hq {a.hq} hkv {a.hkv} d {a.head_dim} page {a.page_size} nq {nq} q {dt}"
                + (" causal" if a.causal and nq > 1 else ""))
        t0 = time.time()
        try:
            path = paged.precompile(cache, a.hq, num_queries=nq, dtype=dtypes[dt],
                                    causal=a.causal, scale=a.scale, target=a.target)
        except compiler.CompileError as e:
            print(f"qattn.precompile: {what}: {e}", file=sys.stderr)
            status = 1
            continue
        print(f"[{i}/{len(jobs)}] {what}: {path} ({time.time() - t0:.1f} s)", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
