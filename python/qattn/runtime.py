"""Load qattn artifacts and call their functions from Python (ctypes over the runtime's C ABI).

The C ABI is ``runtime/include/qattn/Runtime/CApi.h``, built as ``libqattn_runtime_c.so`` into
``<build>/lib`` by the runtime's CMake (the full tree and ``-DQATTN_RUNTIME_ONLY=ON`` alike) and
installed by ``cmake --install``. It is found, in order, at ``$QATTN_RUNTIME_LIB`` (the file), in
``$QATTN_BUILD_DIR/lib``, then in an installed package's own prefix (its library folder), or in the
source tree in the repository's ``build/lib``, ``build-gpu/lib`` and ``build-runtime/lib``.

>>> art = Artifact("art")                       # a qattn-compile output folder
>>> f = art["attention_int4"]
>>> [a.name for a in f.args], f.results[0].shape
>>> out, = f(q, k, v)                           # cpu artifacts: NumPy arrays in, NumPy arrays out

A shape may name sizes by symbols (``TensorSpec.shape == ("B", 8, 1, 64)``, docs/ARTIFACT.md):
the arguments of a call bind them, and the results are allocated with the shapes that follow
(``Function.result_shapes``), so one function serves every batch and cache length.

CPU artifacts run in place on NumPy arrays (no copies). CUDA artifacts run on device pointers
on a given CUDA stream (``Function.launch``; ``qattn.torch_ops`` wraps it for torch tensors), or
on NumPy arrays through the runtime's own device copies (``Function.run_host``).
Errors raise ``QAttnRuntimeError`` with the runtime's message; nothing aborts.
"""

import ctypes
import os
from dataclasses import dataclass

import numpy as np

from . import _locate

__all__ = ["QAttnRuntimeError", "TensorSpec", "Function", "Artifact", "find_library", "DTYPES"]

ABI_VERSION = 2

# Manifest dtype -> (C ABI code, NumPy dtype holding it). bf16 travels as uint16 bit patterns
# (NumPy has no bfloat16); i8 accepts uint8 too, since packed codes are unsigned bytes.
DTYPES = {
    "f64": (0, np.dtype("<f8")),
    "f32": (1, np.dtype("<f4")),
    "f16": (2, np.dtype("<f2")),
    "bf16": (3, np.dtype("<u2")),
    "i64": (4, np.dtype("<i8")),
    "i32": (5, np.dtype("<i4")),
    "i8": (6, np.dtype("i1")),
}
_CODE_NAMES = {code: name for name, (code, _) in DTYPES.items()}
_ALSO_ACCEPTED = {"i8": (np.dtype("u1"),)}

_ARG, _RESULT, _BUFFER = 0, 1, 2


class QAttnRuntimeError(RuntimeError):
    """An error reported by the qattn runtime (bad artifact, shapes, CUDA failure, ...)."""


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
    ]


_LIBNAME = "libqattn_runtime_c.so"


def find_library():
    """The path of libqattn_runtime_c.so, or raise QAttnRuntimeError saying where it looked."""
    env = os.environ.get("QATTN_RUNTIME_LIB")
    if env:
        if not os.path.isfile(env):
            raise QAttnRuntimeError(f"QATTN_RUNTIME_LIB={env}: no such file")
        return env
    path, dirs = _locate.find_library(_LIBNAME, builds=("build", "build-gpu", "build-runtime"))
    if path:
        return path
    raise QAttnRuntimeError(
        f"cannot find {_LIBNAME} (looked in $QATTN_RUNTIME_LIB, {', '.join(dirs)}); build it with "
        "scripts/build.sh, or scripts/gpu-check/build-runtime.sh on a machine without MLIR")


_lib = None


def _library():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(find_library())
    P = ctypes.c_void_p
    sig = {
        "qattnRtGetAbiVersion": (ctypes.c_int, []),
        "qattnRtGetLastError": (ctypes.c_char_p, []),
        "qattnRtIsCudaBuilt": (ctypes.c_int, []),
        "qattnRtOpen": (P, [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
        "qattnRtClose": (None, [P]),
        "qattnRtGetTarget": (ctypes.c_char_p, [P]),
        "qattnRtDescribe": (ctypes.c_char_p, [P]),
        "qattnRtGetNumFunctions": (ctypes.c_int64, [P]),
        "qattnRtGetFunctionName": (ctypes.c_char_p, [P, ctypes.c_int64]),
        "qattnRtFindFunction": (ctypes.c_int64, [P, ctypes.c_char_p]),
        "qattnRtGetNumTensors": (ctypes.c_int64, [P, ctypes.c_int64, ctypes.c_int32]),
        "qattnRtGetTensor": (ctypes.c_int, [
            P, ctypes.c_int64, ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32),
            ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))]),
        "qattnRtGetTensorSymbol": (ctypes.c_char_p, [P, ctypes.c_int64, ctypes.c_int32,
                                                     ctypes.c_int64, ctypes.c_int32]),
        "qattnRtGetResultShapes": (ctypes.c_int, [P, ctypes.c_int64, ctypes.POINTER(_Tensor),
                                                  ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                                                  ctypes.c_int64]),
        "qattnRtReserve": (ctypes.c_int, [P, ctypes.c_int64, ctypes.POINTER(_Tensor),
                                          ctypes.c_int64]),
        "qattnRtRun": (ctypes.c_int, [P, ctypes.c_int64, ctypes.POINTER(_Tensor), ctypes.c_int64,
                                      ctypes.POINTER(_Tensor), ctypes.c_int64, P]),
        "qattnRtGetWorkspaceSize": (ctypes.c_int, [P, ctypes.c_int64, ctypes.POINTER(_Tensor),
                                                   ctypes.c_int64,
                                                   ctypes.POINTER(ctypes.c_int64)]),
        "qattnRtRunWorkspace": (ctypes.c_int, [P, ctypes.c_int64, ctypes.POINTER(_Tensor),
                                               ctypes.c_int64, ctypes.POINTER(_Tensor),
                                               ctypes.c_int64, P, P, ctypes.c_int64]),
        "qattnRtRunHost": (ctypes.c_int, [P, ctypes.c_int64, ctypes.POINTER(_Tensor),
                                          ctypes.c_int64, ctypes.POINTER(_Tensor),
                                          ctypes.c_int64]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    version = lib.qattnRtGetAbiVersion()
    if version != ABI_VERSION:
        raise QAttnRuntimeError(f"{_LIBNAME} has ABI version {version}, this module expects "
                                f"{ABI_VERSION}: rebuild the runtime")
    _lib = lib
    return lib


def _last_error(lib):
    return lib.qattnRtGetLastError().decode("utf-8", "replace")


def cuda_built():
    """Whether the runtime library was built with the cuda target."""
    return bool(_library().qattnRtIsCudaBuilt())


def _format_shape(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of a function's signature, as the manifest gives it: ``shape`` holds an int per
    static size and the symbol (a str, e.g. ``"B"``) where a call binds the size."""

    name: str
    dtype: str  # manifest spelling: f32, bf16, i8, ...
    shape: tuple

    @property
    def numpy_dtype(self):
        return DTYPES[self.dtype][1]

    @property
    def is_static(self):
        return all(isinstance(s, int) for s in self.shape)

    @property
    def nbytes(self):
        """The size of a tensor of this spec in bytes; a spec with symbols has no fixed size."""
        if not self.is_static:
            raise ValueError(f"{self.name}: shape {_format_shape(self.shape)} has symbolic sizes")
        return int(np.prod(self.shape, dtype=np.int64)) * self.numpy_dtype.itemsize

    def matches(self, shape):
        """Whether ``shape`` has this spec's rank and static sizes (symbols match any size)."""
        return len(shape) == len(self.shape) and all(
            isinstance(s, str) or s == n for s, n in zip(self.shape, shape))

    def __str__(self):
        return f"{self.name}: {self.dtype} {_format_shape(self.shape)}"


class Function:
    """A function of a loaded artifact: ``args``, ``results`` (and, cuda, ``buffers``) specs."""

    def __init__(self, artifact, index):
        self._artifact = artifact
        self.index = index
        lib = _library()
        handle = artifact._handle
        self.name = lib.qattnRtGetFunctionName(handle, index).decode()
        self.args = self._specs(_ARG)
        self.results = self._specs(_RESULT)
        self.buffers = self._specs(_BUFFER)
        # Shapes as the C ABI takes them, made once per shape (they are only read): a launch
        # of a serving loop passes the same few shapes again and again.
        self._shape_arrays = {}

    def _specs(self, kind):
        lib, handle = _library(), self._artifact._handle
        n = lib.qattnRtGetNumTensors(handle, self.index, kind)
        if n < 0:
            raise QAttnRuntimeError(_last_error(lib))
        specs = []
        for i in range(n):
            name, dtype, rank = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_int32()
            shape = ctypes.POINTER(ctypes.c_int64)()
            if lib.qattnRtGetTensor(handle, self.index, kind, i, ctypes.byref(name),
                                    ctypes.byref(dtype), ctypes.byref(rank), ctypes.byref(shape)):
                raise QAttnRuntimeError(_last_error(lib))
            sizes = []
            for j in range(rank.value):
                symbol = lib.qattnRtGetTensorSymbol(handle, self.index, kind, i, j)
                if symbol is None:
                    raise QAttnRuntimeError(_last_error(lib))
                sizes.append(symbol.decode() if symbol else shape[j])
            specs.append(TensorSpec(name.value.decode(), _CODE_NAMES[dtype.value],
                                    tuple(sizes)))
        return specs

    @property
    def target(self):
        return self._artifact.target

    def signature(self):
        args = ", ".join(map(str, self.args))
        results = ", ".join(map(str, self.results))
        return f"{self.name}({args}) -> ({results})"

    def __repr__(self):
        return f"<qattn Function {self.signature()}>"

    # -- host (NumPy) calls --------------------------------------------------------------------

    @staticmethod
    def _shape_tensors(arg_shapes):
        """Shape-only C tensors for ``arg_shapes``; returns them and what keeps them alive."""
        keep = []
        tensors = []
        for shape in arg_shapes:
            shp = (ctypes.c_int64 * max(1, len(shape)))(*(int(s) for s in shape))
            keep.append(shp)
            tensors.append(_Tensor(None, 0, len(shape), shp))
        return (_Tensor * max(1, len(tensors)))(*tensors), len(tensors), keep

    def reserve(self, *arg_shapes):
        """Prepares calls with arguments of shapes ``arg_shapes`` (in manifest order), which
        bind the symbols as for ``result_shapes``: a cuda function sizes its scratch buffers
        for them, so that later calls at these sizes or smaller allocate nothing (do it at the
        largest sizes before capturing a CUDA graph); a cpu function only checks the shapes."""
        a, n, _keep = self._shape_tensors(arg_shapes)
        lib = _library()
        if lib.qattnRtReserve(self._artifact._handle, self.index, a, n):
            raise QAttnRuntimeError(_last_error(lib))

    def workspace_bytes(self, *arg_shapes):
        """The bytes of the workspace ``launch(..., workspace=)`` needs for arguments of shapes
        ``arg_shapes`` (in manifest order): the cuda function's scratch buffers at 256-byte
        aligned offsets; 0 for a cpu function or one without buffers."""
        a, n, _keep = self._shape_tensors(arg_shapes)
        out = ctypes.c_int64(0)
        lib = _library()
        if lib.qattnRtGetWorkspaceSize(self._artifact._handle, self.index, a, n,
                                       ctypes.byref(out)):
            raise QAttnRuntimeError(_last_error(lib))
        return out.value

    def result_shapes(self, *arg_shapes):
        """The results' shapes (tuples) for arguments of shapes ``arg_shapes`` (in manifest
        order): the arguments bind the symbols, which the runtime checks (every occurrence of a
        symbol one size, at least 1; QAttnRuntimeError naming the argument and dimension)."""
        a, n, _keep = self._shape_tensors(arg_shapes)
        ranks = [len(r.shape) for r in self.results]
        out = (ctypes.c_int64 * max(1, sum(ranks)))()
        lib = _library()
        if lib.qattnRtGetResultShapes(self._artifact._handle, self.index, a, n, out,
                                      sum(ranks)):
            raise QAttnRuntimeError(_last_error(lib))
        shapes, at = [], 0
        for rank in ranks:
            shapes.append(tuple(out[at:at + rank]))
            at += rank
        return shapes

    def _host_tensor(self, spec, array, kind, keep):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{kind} {spec.name!r} of {self.name}: expected a numpy.ndarray, "
                            f"got {type(array).__name__}")
        want = spec.numpy_dtype
        if array.dtype != want and array.dtype not in _ALSO_ACCEPTED.get(spec.dtype, ()):
            raise TypeError(f"{kind} {spec.name!r} of {self.name}: expected dtype {want} "
                            f"(manifest {spec.dtype}), got {array.dtype}")
        # The runtime checks that the symbols' sizes agree (QAttnRuntimeError).
        if not spec.matches(array.shape):
            raise ValueError(f"{kind} {spec.name!r} of {self.name}: expected shape "
                             f"{_format_shape(spec.shape)}, got {list(array.shape)}")
        if not array.flags.c_contiguous:
            raise ValueError(f"{kind} {spec.name!r} of {self.name}: the array is not C-contiguous "
                             "(numpy.ascontiguousarray makes it so)")
        if kind == "result" and not array.flags.writeable:
            raise ValueError(f"result {spec.name!r} of {self.name}: the array is read-only")
        shape = (ctypes.c_int64 * max(1, array.ndim))(*array.shape)
        keep.append(shape)
        return _Tensor(array.ctypes.data, DTYPES[spec.dtype][0], array.ndim, shape)

    def _host_call(self, entry, args, out):
        if len(args) != len(self.args):
            raise TypeError(f"{self.name} takes {len(self.args)} arguments "
                            f"({', '.join(a.name for a in self.args)}), got {len(args)}")
        keep = []
        a = (_Tensor * max(1, len(args)))(
            *[self._host_tensor(s, x, "argument", keep) for s, x in zip(self.args, args)])
        if out is None:
            shapes = self.result_shapes(*(x.shape for x in args))
            out = [np.empty(shape, r.numpy_dtype) for r, shape in zip(self.results, shapes)]
        elif len(out) != len(self.results):
            raise TypeError(f"{self.name} has {len(self.results)} results, got {len(out)} outputs")
        r = (_Tensor * max(1, len(out)))(
            *[self._host_tensor(s, x, "result", keep) for s, x in zip(self.results, out)])
        lib = _library()
        status = entry(lib, a, len(args), r, len(out))
        if status:
            raise QAttnRuntimeError(_last_error(lib))
        return list(out)

    def __call__(self, *args, out=None):
        """Runs the function on NumPy arrays (in manifest order) and returns the results as a list
        of new arrays (or fills ``out``). cpu: in place, no copies; cuda: through ``run_host``."""
        if self.target != "cpu":
            return self.run_host(*args, out=out)
        handle = self._artifact._handle
        return self._host_call(
            lambda lib, a, na, r, nr: lib.qattnRtRun(handle, self.index, a, na, r, nr, None),
            args, out)

    def run_host(self, *args, out=None):
        """Any target: copies the arguments in (cuda: to device memory the runtime owns, results
        poisoned with NaN first), runs, waits and copies the results out, as qattn-run does."""
        handle = self._artifact._handle
        return self._host_call(
            lambda lib, a, na, r, nr: lib.qattnRtRunHost(handle, self.index, a, na, r, nr),
            args, out)

    # -- device calls ---------------------------------------------------------------------------

    def launch(self, args, results, stream=0, workspace=None):
        """cuda: enqueues the function on ``stream`` (a CUstream / cudaStream_t as an int; 0 is
        the legacy default stream) and returns without waiting.

        ``args``/``results``: sequences of ``(device_pointer, dtype, shape)`` in manifest order,
        ``dtype`` a manifest spelling ('f32', 'bf16', 'i8', ...). The runtime checks counts,
        dtypes, shapes, null and 16-byte alignment before launching anything. ``workspace``:
        ``(device_pointer, bytes)``, 256-byte aligned, at least ``workspace_bytes`` at these
        sizes: the call's scratch buffers live there instead of in the function's own (nothing
        is allocated; calls with distinct workspaces may run on two streams at once)."""
        arrays = self._shape_arrays
        if len(arrays) >= 4096:  # before the call: its own arrays stay alive through it
            arrays.clear()

        def convert(items, kind):
            tensors = []
            for i, (ptr, dtype, shape) in enumerate(items):
                if dtype not in DTYPES:
                    raise ValueError(f"{kind} {i} of {self.name}: unknown dtype {dtype!r}")
                shape = tuple(shape)
                shp = arrays.get(shape)
                if shp is None:
                    shp = arrays[shape] = (ctypes.c_int64 * max(1, len(shape)))(*shape)
                tensors.append(_Tensor(int(ptr), DTYPES[dtype][0], len(shape), shp))
            return (_Tensor * max(1, len(tensors)))(*tensors), len(tensors)

        a, na = convert(args, "argument")
        r, nr = convert(results, "result")
        lib = _library()
        handle, s = self._artifact._handle, ctypes.c_void_p(int(stream)) if stream else None
        if workspace is None:
            failed = lib.qattnRtRun(handle, self.index, a, na, r, nr, s)
        else:
            ptr, nbytes = workspace
            failed = lib.qattnRtRunWorkspace(handle, self.index, a, na, r, nr, s,
                                             ctypes.c_void_p(int(ptr)) if ptr else None,
                                             int(nbytes))
        if failed:
            raise QAttnRuntimeError(_last_error(lib))


class Artifact:
    """A loaded artifact folder (``manifest.json`` + ``module.so`` or ``module.cubin``/``.ptx``).

    ``device`` picks the CUDA device of a cuda artifact (ignored for cpu). ``verbose`` makes the
    runtime describe loading and launches on stderr. Functions by name: ``art["f"]``,
    ``art.functions`` (a dict in manifest order)."""

    def __init__(self, directory, device=0, verbose=False):
        lib = _library()
        self.directory = os.fspath(directory)
        self._handle = None
        handle = lib.qattnRtOpen(os.fsencode(self.directory), int(device), int(bool(verbose)))
        if not handle:
            raise QAttnRuntimeError(_last_error(lib))
        self._handle = handle
        self.device = int(device)
        self.target = lib.qattnRtGetTarget(handle).decode()
        self.description = lib.qattnRtDescribe(handle).decode()
        n = lib.qattnRtGetNumFunctions(handle)
        self.functions = {}
        for i in range(n):
            fn = Function(self, i)
            self.functions[fn.name] = fn

    def __getitem__(self, name):
        fn = self.functions.get(name)
        if fn is None:
            raise KeyError(f"{self.directory}: no function {name!r} (functions: "
                           f"{', '.join(self.functions) or 'none'})")
        return fn

    def __contains__(self, name):
        return name in self.functions

    def close(self):
        """Frees the artifact now (else when garbage-collected). Pending launches must be done."""
        if self._handle is not None and _lib is not None:
            _lib.qattnRtClose(self._handle)
        self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"<qattn Artifact {self.directory!r} target={self.target} "
                f"functions={list(self.functions)}>")
