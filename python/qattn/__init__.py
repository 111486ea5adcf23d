"""qattn from Python (docs/PYTHON.md).

* ``qattn.format``: an independent NumPy implementation of the quantized formats of
  ``docs/FORMAT.md`` (stage-1 int8, stage-2 packed b-bit, decode buffer, softmax terms, the
  attention semantics); the reference the rest is checked against.
* ``qattn.ir`` / ``qattn.compiler``: build the MLIR text of quantize and attention functions and
  compile it with ``qattn-compile`` into an artifact.
* ``qattn.runtime``: load an artifact and call its functions (ctypes over the runtime's C ABI,
  ``libqattn_runtime_c.so``).
* ``qattn.torch_quant`` / ``qattn.torch_ops``: the formats in PyTorch, and the compiled kernels as
  ``torch.ops.qattn.*`` custom ops.
* ``qattn.kv_cache``: a preallocated quantized KV cache (NumPy or torch storage).
* ``qattn.paged``: a paged quantized KV cache on torch tensors for serving engines (append,
  prefill, decode through one compiled function per scheme, cached on disk).
* ``qattn.report``: picks a KV-cache scheme from calibration K/V by compiling and running
  candidates with ``qattn-compile`` / ``qattn-run``.
* ``qattn.llama2c``: a NumPy llama2.c model for accuracy work.

Importing the package imports none of them; ``format``, ``ir``, ``compiler``, ``kv_cache`` and
``llama2c`` need only NumPy, ``runtime`` the built library, the torch modules PyTorch.
"""
