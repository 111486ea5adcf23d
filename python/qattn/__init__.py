"""qattn Python helpers.

``qattn.format`` is an independent NumPy implementation of the quantized formats defined in
``docs/FORMAT.md`` (stage-1 int8, stage-2 packed b-bit, decode buffer, softmax terms and the
attention semantics). ``qattn.llama2c`` is a NumPy llama2.c model for accuracy work.
``qattn.report`` (``python/qattn/report.py``) picks a KV-cache scheme from calibration K/V by
compiling and running candidates with ``qattn-compile`` / ``qattn-run``. Nothing in this package
imports compiled code.
"""
