"""Compile qattn MLIR text into an artifact folder with ``qattn-compile``.

``qattn-compile`` is found at ``$QATTN_COMPILE``, else on ``PATH``, else in the repository's
``build/bin`` (or ``$QATTN_BUILD_DIR/bin``). It needs LLVM/MLIR, so compile on the machine that
has them and carry the folder to the one that runs it (docs/ARTIFACT.md).

>>> from qattn import ir, compiler
>>> kv = ir.Scheme(bits=(4,), group=16, block=64)
>>> text = ir.module(ir.attention_function("decode", batch=1, hq=8, hkv=2, nq=1, nk=1024,
...                                        d=64, kv=kv, q="f32"))
>>> compiler.compile_module(text, "art/", target="cuda")
"""

import os
import shutil
import subprocess

__all__ = ["CompileError", "find_qattn_compile", "compile_module"]

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class CompileError(RuntimeError):
    """qattn-compile rejected the module or could not run; the message holds its diagnostics."""


def find_qattn_compile():
    """The path of qattn-compile, or raise CompileError saying where it looked."""
    env = os.environ.get("QATTN_COMPILE")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise CompileError(f"QATTN_COMPILE={env}: not an executable file")
        return env
    found = shutil.which("qattn-compile")
    if found:
        return found
    builds = [os.environ.get("QATTN_BUILD_DIR"), os.path.join(_REPO, "build")]
    for b in filter(None, builds):
        path = os.path.join(b, "bin", "qattn-compile")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise CompileError("cannot find qattn-compile ($QATTN_COMPILE, PATH, build/bin); build it "
                       "with scripts/build.sh")


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
