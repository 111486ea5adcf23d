"""Where qattn's tools (``qattn-compile``, ``qattn-run``) and libraries (``libqattn_runtime_c.so``)
are, for ``qattn.compiler``, ``qattn.runtime`` and ``qattn.report``.

An installed package (``cmake --install``, docs/PYTHON.md) has a ``_install.py`` beside this file,
written by the install step, giving its prefix's ``bin`` and ``lib`` folders relative to the
package's own folder; it uses those, so it needs no environment and no source tree. In the source
tree (``python/`` on ``PYTHONPATH``) there is no ``_install.py`` and the repository's build folders
are used instead. Either way the environment comes first: the callers look at the variable that
names the file itself (``QATTN_COMPILE``, ``QATTN_RUNTIME_LIB``) before asking here, and
``$QATTN_BUILD_DIR`` comes first here.
"""

import os
import shutil

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))

try:
    from . import _install
except ImportError:
    _install = None


def installed():
    """True for a package that ``cmake --install`` put in place."""
    return _install is not None


def _build_dirs(kind, builds):
    """``$QATTN_BUILD_DIR/<kind>``, then (installed) the prefix's folder, then (source tree)
    ``<repo>/<b>/<kind>`` for each build folder name ``b``; the last group follows ``PATH``."""
    env = os.environ.get("QATTN_BUILD_DIR")
    first = [os.path.join(env, kind)] if env else []
    if _install is not None:
        rel = {"bin": _install.BINDIR, "lib": _install.LIBDIR}[kind]
        return first + [os.path.normpath(os.path.join(_HERE, rel))], []
    return first, [os.path.join(_REPO, b, kind) for b in builds]


def find_tool(name):
    """The path of the executable ``name`` and the places looked at, in order:
    ``$QATTN_BUILD_DIR/bin``, the install prefix's ``bin`` (installed package), ``PATH``, the
    repository's ``build/bin`` (source tree). The path is None if it is nowhere."""
    before, after = _build_dirs("bin", ("build",))
    looked = []
    for d in before + [None] + after:
        looked.append(d or "PATH")
        path = shutil.which(name) if d is None else os.path.join(d, name)
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path, looked
    return None, looked


def find_library(name, builds=("build",)):
    """The path of the library file ``name`` and the places looked at, in order:
    ``$QATTN_BUILD_DIR/lib``, the install prefix's library folder (installed package), the
    repository's ``<b>/lib`` for each ``b`` in ``builds`` (source tree). The path is None if it
    is nowhere."""
    before, after = _build_dirs("lib", builds)
    for d in before + after:
        path = os.path.join(d, name)
        if os.path.isfile(path):
            return path, before + after
    return None, before + after
