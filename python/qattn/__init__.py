"""qattn Python helpers.

``qattn.format`` is an independent NumPy implementation of the quantized formats defined in
``docs/FORMAT.md`` (stage-1 int8, stage-2 packed b-bit, decode buffer, softmax terms and the
attention semantics). Nothing in this package imports compiled code.
"""
