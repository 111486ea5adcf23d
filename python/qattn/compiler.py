"""Compile qattn MLIR text into an artifact folder with ``qattn-compile``.

``qattn-compile`` is found at ``$QATTN_COMPILE``, else in ``$QATTN_BUILD_DIR/bin``, else (an
installed package, docs/PYTHON.md) in its install prefix's ``bin``, else on ``PATH``, else (the
source tree) in the repository's ``build/bin``. It needs LLVM/MLIR, so compile on the machine that
has them and carry the folder to the one that runs it (docs/ARTIFACT.md).

>>> from qattn import ir, compiler
>>> kv = ir.Scheme(bits=(4,), group=16, block=64)
>>> text = ir.module(ir.attention_function("decode", batch=1, hq=8, hkv=2, nq=1, nk=1024,
...                                        d=64, kv=kv, q="f32"))
>>> compiler.compile_module(text, "art/", target="cuda")
"""

import os
import subprocess

from . import _locate

__all__ = ["CompileError", "find_qattn_compile", "compile_module"]


class CompileError(RuntimeError):
    """qattn-compile rejected the module or could not run; the message holds its diagnostics."""


def find_qattn_compile():
    """The path of qattn-compile, or raise CompileError saying where it looked."""
    env = os.environ.get("QATTN_COMPILE")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise CompileError(f"QATTN_COMPILE={env}: not an executable file")
        return env
    path, looked = _locate.find_tool("qattn-compile")
    if path:
        return path
    raise CompileError(f"cannot find qattn-compile (looked in $QATTN_COMPILE, "
                       f"{', '.join(looked)}); build it with scripts/build.sh")


def compile_module(text, out_dir, target="cpu", extra_args=(), source_name="module.mlir"):
    """Writes ``text`` to ``out_dir/source_name`` and compiles it into the artifact folder
    ``out_dir`` for ``target`` ('cpu' or 'cuda'). Returns ``out_dir``. Raises CompileError with
    qattn-compile's diagnostics if it fails."""
    if target not in ("cpu", "cuda"):
        raise ValueError(f"target must be 'cpu' or 'cuda', got {target!r}")
    os.makedirs(out_dir, exist_ok=True)
    src = os.path.join(out_dir, source_name)
    with open(src, "w") as f:
        f.write(text)
    cmd = [find_qattn_compile(), src, "-o", out_dir, f"--target={target}", *extra_args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise CompileError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr}{r.stdout}")
    return out_dir
