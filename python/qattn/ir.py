"""Build the MLIR text of qattn functions from a few parameters.

The types of a quantized attention are long and follow from the sizes and the scheme (see
docs/FORMAT.md for every operand), so they are derived here. ``qattn.compiler`` turns the text
into an artifact.

>>> kv = Scheme(bits=(4,), group=16, block=64)
>>> text = module(attention_function("decode", batch=1, hq=32, hkv=8, nq=1, nk=4096, d=128,
...                                  kv=kv, q="f32", buffer=17, out="bf16"))

Operand names (each function argument carries ``qattn.name``, which the manifest and the
runtime use): query ``q`` (float) or ``q8``, ``qs`` (BPQ int8 with block scales); keys ``kp``,
``ks``, ``kg``, ``kz`` (stage 2: packed codes, stage-1 block scales, stage-2 group scales, zero
points) or ``k8``, ``ks`` (stage 1 only); values the same with ``v``; decode buffers ``kb``,
``kbs``, ``vb``, ``vbs``; the result ``out``.
"""

from dataclasses import dataclass

__all__ = [
    "Scheme",
    "attention_operands",
    "attention_function",
    "quantize_function",
    "module",
    "tensor_type",
]

_FLOATS = ("f32", "f16", "bf16")


def _cdiv(a, b):
    return -(-a // b)


def _float(x):
    """An MLIR float literal (it needs the decimal point: ``1e-05`` is not one)."""
    return f"{float(x):.9e}"


def tensor_type(shape, elt):
    """``tensor<AxBx...xelt>``."""
    return "tensor<" + "x".join(str(int(s)) for s in shape) + "x" + elt + ">"


@dataclass(frozen=True)
class Scheme:
    """How K or V (or, with ``bits=()``, Q) is quantized.

    ``block``: stage-1 block of tokens (``#qattn.stage1<block = ..>``); ``scale``: the stage-1
    scales' dtype, ``f32`` or ``f16``; ``granularity``: one scale per block (``block``) or per
    block and channel (``channel``); ``bits``: stage-2 bit width per head, or one entry for all
    heads, each 2, 3 or 4; ``()`` for stage 1 only (int8); ``group``: stage-2 token group
    (divides ``block``); ``order``: packing; ``anchor``: the stage-2 grid starts at a multiple
    of the scale (``zero``) or at each group's minimum (``min``); ``fit``: how the quantize
    functions choose the stage-2 constants (``minmax`` or ``mse``; not part of the stored
    format). docs/FORMAT.md defines each.
    """

    bits: tuple = (4,)
    group: int = 16
    block: int = 64
    order: str = "lsb_first"
    anchor: str = "zero"
    fit: str = "minmax"
    scale: str = "f32"
    granularity: str = "block"

    def __post_init__(self):
        object.__setattr__(self, "bits", tuple(int(b) for b in self.bits))
        for b in self.bits:
            if b not in (2, 3, 4):
                raise ValueError(f"bit widths must be 2, 3 or 4, got {self.bits}")
        if self.block <= 0 or self.group <= 0:
            raise ValueError("block and group must be positive")
        if self.bits and self.block % self.group:
            raise ValueError(f"the group ({self.group}) must divide the block ({self.block})")
        for field, allowed in (("order", ("lsb_first", "msb_first")), ("anchor", ("zero", "min")),
                               ("fit", ("minmax", "mse")), ("scale", ("f32", "f16")),
                               ("granularity", ("block", "channel"))):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{field} must be one of {', '.join(allowed)}, "
                                 f"got {getattr(self, field)!r}")

    @property
    def stage1(self):
        scale = "" if self.scale == "f32" else f", scale = {self.scale}"
        gran = "" if self.granularity == "block" else f", granularity = {self.granularity}"
        return f"#qattn.stage1<block = {self.block}{scale}{gran}>"

    @property
    def stage2(self):
        if not self.bits:
            return None
        order = "" if self.order == "lsb_first" else f", order = {self.order}"
        anchor = "" if self.anchor == "zero" else f", anchor = {self.anchor}"
        return (f"#qattn.stage2<bits = [{', '.join(map(str, self.bits))}], group = {self.group}"
                f"{order}{anchor}>")

    def scales_shape(self, batch, heads, n, d):
        """The stage-1 scales' shape: [B, H, ceil(n / block)], channel granularity ``+ [d]``."""
        shape = (batch, heads, _cdiv(n, self.block))
        return shape + (d,) if self.granularity == "channel" else shape

    def head_bits(self, heads):
        """The bit width of every head (``bits`` repeated when it has one entry)."""
        if len(self.bits) == 1:
            return [self.bits[0]] * heads
        if len(self.bits) != heads:
            raise ValueError(f"the scheme lists {len(self.bits)} heads' bits, there are {heads}")
        return list(self.bits)

    def row_bytes(self, heads, d):
        """Bytes per token of the packed codes of all heads: ``d * sum(bits) / 8``."""
        if d % 8:
            raise ValueError(f"d must be a multiple of 8, got {d}")
        return d * sum(self.head_bits(heads)) // 8

    def operands(self, x, batch, heads, n, d):
        """(name, shape, dtype) of a quantized K or V operand, ``x`` = 'k' or 'v'."""
        s1 = (f"{x}s", self.scales_shape(batch, heads, n, d), self.scale)
        if not self.bits:
            return [(f"{x}8", (batch, heads, n, d), "i8"), s1]
        groups = (batch, heads, _cdiv(n, self.group), d)
        return [(f"{x}p", (batch, n, self.row_bytes(heads, d)), "i8"), s1,
                (f"{x}g", groups, "i8"), (f"{x}z", groups, "i8")]


def attention_operands(*, batch, hq, hkv, nq, nk, d, kv, v_kv=None, q="int8", q_block=None,
                       buffer=0):
    """The operands of ``attention_function`` as (name, shape, dtype) triples, in order."""
    v_kv = v_kv or kv
    if q == "int8":
        ops = [("q8", (batch, hq, nq, d), "i8"),
               ("qs", (batch, hq, _cdiv(nq, q_block or kv.block)), "f32")]
    elif q in _FLOATS:
        ops = [("q", (batch, hq, nq, d), q)]
    else:
        raise ValueError(f"q must be 'int8' or one of {_FLOATS}, got {q!r}")
    ops += kv.operands("k", batch, hkv, nk, d)
    ops += v_kv.operands("v", batch, hkv, nk, d)
    if buffer:
        ops += [("kb", (batch, hkv, buffer, d), "i8"), ("kbs", (batch, hkv), "f32"),
                ("vb", (batch, hkv, buffer, d), "i8"), ("vbs", (batch, hkv), "f32")]
    return ops


def attention_function(name, *, batch, hq, hkv, nq, nk, d, kv, v_kv=None, q="int8", q_block=None,
                       causal=False, buffer=0, out="f32", scale=None, softmax="exact",
                       sas_threshold=-6.0, sas_degree=3):
    """``func.func @name`` computing ``qattn.attention`` over quantized operands.

    Shapes: batch, query heads ``hq``, KV heads ``hkv`` (``hq % hkv == 0``: GQA), ``nq``
    queries, ``nk`` cache tokens, head dim ``d``, ``buffer`` decode-buffer tokens (0: none).
    ``kv``/``v_kv``: the K and V schemes (V defaults to K's). ``q``: 'int8' (BPQ int8 with block
    ``q_block``, default the K block) or a float type ('f32', 'f16', 'bf16'). ``out``: 'f32',
    'f16' or 'bf16'. ``scale`` defaults to 1/sqrt(d); ``softmax``: 'exact' or 'sas'.
    """
    if hkv <= 0 or hq % hkv:
        raise ValueError(f"hq ({hq}) must be a multiple of hkv ({hkv})")
    if out not in _FLOATS:
        raise ValueError(f"out must be one of {_FLOATS}, got {out!r}")
    if causal and nq > nk + buffer:
        raise ValueError(f"causal attention needs nq ({nq}) <= nk + buffer ({nk + buffer})")
    v_kv = v_kv or kv
    ops = attention_operands(batch=batch, hq=hq, hkv=hkv, nq=nq, nk=nk, d=d, kv=kv, v_kv=v_kv,
                             q=q, q_block=q_block, buffer=buffer)
    types = [tensor_type(s, t) for _, s, t in ops]
    args = ", ".join(f'%{n}: {t} {{qattn.name = "{n}"}}' for (n, _, _), t in zip(ops, types))
    names = [n for n, _, _ in ops]
    kn = [n for n in names if n[0] == "k" and n not in ("kb", "kbs")]
    vn = [n for n in names if n[0] == "v" and n not in ("vb", "vbs")]
    qpart = "%q8 [%qs]" if q == "int8" else "%q"
    keys = "keys(" + ", ".join("%" + n for n in kn) + ")"
    values = "values(" + ", ".join("%" + n for n in vn) + ")"
    bufs = " buffers(%kb, %kbs, %vb, %vbs)" if buffer else ""
    attrs = []
    if q == "int8":
        attrs.append(f"q_stage1 = #qattn.stage1<block = {q_block or kv.block}>")
    attrs += [f"k_stage1 = {kv.stage1}", f"v_stage1 = {v_kv.stage1}"]
    if kv.stage2:
        attrs.append(f"k_stage2 = {kv.stage2}")
    if v_kv.stage2:
        attrs.append(f"v_stage2 = {v_kv.stage2}")
    if scale is not None:
        attrs.append(f"scale = {_float(scale)} : f32")
    if causal:
        attrs.append("causal")
    if softmax == "sas":
        attrs.append(f"softmax = #qattn.softmax<sas, threshold = {_float(sas_threshold)}, "
                     f"degree = {int(sas_degree)}>")
    elif softmax != "exact":
        raise ValueError(f"softmax must be 'exact' or 'sas', got {softmax!r}")
    result = tensor_type((batch, hq, nq, d), out)
    return (f'func.func @{name}({args}) -> ({result} {{qattn.name = "out"}}) {{\n'
            f"  %o = qattn.attention {qpart} {keys} {values}{bufs} {{{', '.join(attrs)}}}\n"
            f"      : ({', '.join(types)}) -> {result}\n"
            f"  return %o : {result}\n}}\n")


def quantize_function(name, *, batch, heads, n, d, scheme, x="k", dtype="f32"):
    """``func.func @name(%x: [B, H, N, d] dtype) -> quantized operands`` (CPU only: the GPU
    lowering has no quantize ops yet). Results are named as ``Scheme.operands(x, ...)``:
    stage 1 (``x8``, ``xs``) then, with ``scheme.bits``, stage 2 (``xp``, ``xs``, ``xg``,
    ``xz``)."""
    if dtype not in _FLOATS:
        raise ValueError(f"dtype must be one of {_FLOATS}, got {dtype!r}")
    xt = tensor_type((batch, heads, n, d), dtype)
    q8 = tensor_type((batch, heads, n, d), "i8")
    s1 = tensor_type(scheme.scales_shape(batch, heads, n, d), scheme.scale)
    body = [f"  %{x}8, %{x}s = qattn.quantize %in {{scheme = {scheme.stage1}}} : {xt} -> {q8}, {s1}"]
    results = scheme.operands(x, batch, heads, n, d)
    if scheme.bits:
        p = tensor_type(results[0][1], "i8")
        g = tensor_type(results[2][1], "i8")
        fit = "" if scheme.fit == "minmax" else f"fit = #qattn.fit<{scheme.fit}>, "
        body.append(f"  %{x}p, %{x}g, %{x}z = qattn.progressive_quantize %{x}8 "
                    f"{{{fit}scheme = {scheme.stage2}}} : {q8} -> {p}, {g}, {g}")
    rtypes = [tensor_type(s, t) for _, s, t in results]
    named = ", ".join(f'{t} {{qattn.name = "{r}"}}' for (r, _, _), t in zip(results, rtypes))
    return (f'func.func @{name}(%in: {xt} {{qattn.name = "{x}"}}) -> ({named}) {{\n'
            + "\n".join(body) + "\n"
            f"  return {', '.join('%' + r for r, _, _ in results)} : {', '.join(rtypes)}\n}}\n")


def module(*functions, header=""):
    """The functions' text as one module (a file of top-level func.func ops)."""
    head = "".join(f"// {line}\n" for line in header.splitlines()) if header else ""
    return head + "\n".join(functions)
