/*===-- qattn/Runtime/CApi.h - C ABI of the qattn runtime ---------*- C -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// A small C ABI over the runtime (library libqattn_runtime_c.so, CMake target
// qattn_runtime_c), for callers that cannot use its C++ API: Python's ctypes
// (python/qattn/runtime.py), other languages' FFIs. It opens an artifact,
// lists its functions and their signatures as the manifest gives them, and
// runs a function on buffers the caller owns:
//
//   * target "cpu":  host pointers, called synchronously, no copies;
//   * target "cuda": device pointers, enqueued on the caller's CUstream
//                    (cudaStream_t; PyTorch's current stream), not waited for.
//
// Nothing here aborts or throws: every function that can fail returns a
// status (0 = success) or NULL, and qattnRtGetLastError() says why, in the
// runtime's words (docs/RUNNING.md). The error is per thread.
//
//===----------------------------------------------------------------------===*/

#ifndef QATTN_RUNTIME_CAPI_H
#define QATTN_RUNTIME_CAPI_H

#include <stdint.h>

#if defined(_WIN32)
#define QATTN_RT_EXPORT __declspec(dllexport)
#else
#define QATTN_RT_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version; bumped on any incompatible change. */
#define QATTN_RT_ABI_VERSION 2

/* Element types, in the order of qattn::rt::DType (the manifest spellings
 * f64 f32 f16 bf16 i64 i32 i8). */
enum QAttnRtDType {
  QATTN_RT_F64 = 0,
  QATTN_RT_F32 = 1,
  QATTN_RT_F16 = 2,
  QATTN_RT_BF16 = 3,
  QATTN_RT_I64 = 4,
  QATTN_RT_I32 = 5,
  QATTN_RT_I8 = 6
};

/* Which list of a function's tensors: its arguments, its results, or (cuda)
 * the scratch buffers the runtime allocates for it. */
enum QAttnRtTensorKind {
  QATTN_RT_ARG = 0,
  QATTN_RT_RESULT = 1,
  QATTN_RT_BUFFER = 2
};

/* A dense row-major buffer the caller owns: host memory for a cpu artifact,
 * device memory (a CUdeviceptr cast to a pointer, 16-byte aligned) for a cuda
 * artifact. `shape[0..rank)` must stay valid during the call. */
typedef struct QAttnRtTensor {
  void *data;
  int32_t dtype; /* enum QAttnRtDType */
  int32_t rank;
  const int64_t *shape;
} QAttnRtTensor;

/* A loaded artifact; owns its functions. */
typedef struct QAttnRtArtifact QAttnRtArtifact;

/* QATTN_RT_ABI_VERSION of the library, to check against the header's. */
QATTN_RT_EXPORT int qattnRtGetAbiVersion(void);

/* Why the calling thread's last failed call failed; "" if none has. Valid
 * until the thread's next call into this library. */
QATTN_RT_EXPORT const char *qattnRtGetLastError(void);

/* Whether the library was built with the cuda target (1) or not (0). */
QATTN_RT_EXPORT int qattnRtIsCudaBuilt(void);

/* Loads the artifact in `directory` (docs/ARTIFACT.md); cuda artifacts on
 * device `device` (ignored for cpu), in its primary context. NULL on error.
 * With `verbose` set, loading and launching are described on stderr. */
QATTN_RT_EXPORT QAttnRtArtifact *qattnRtOpen(const char *directory, int device,
                                             int verbose);

/* Frees the artifact: its module or library and its device memory. NULL is
 * allowed. Pending cuda launches must have finished. */
QATTN_RT_EXPORT void qattnRtClose(QAttnRtArtifact *artifact);

/* The manifest's target ("cpu", "cuda"), and one line on where the artifact
 * runs ("" for cpu). Valid until qattnRtClose. */
QATTN_RT_EXPORT const char *qattnRtGetTarget(const QAttnRtArtifact *artifact);
QATTN_RT_EXPORT const char *qattnRtDescribe(const QAttnRtArtifact *artifact);

/* The artifact's functions, in manifest order. */
QATTN_RT_EXPORT int64_t qattnRtGetNumFunctions(const QAttnRtArtifact *artifact);
/* The name of function `index`; NULL if out of range. */
QATTN_RT_EXPORT const char *qattnRtGetFunctionName(const QAttnRtArtifact *artifact,
                                                   int64_t index);
/* The index of the function called `name`; -1 (and an error listing the
 * functions) if there is none. */
QATTN_RT_EXPORT int64_t qattnRtFindFunction(const QAttnRtArtifact *artifact,
                                            const char *name);

/* How many tensors of `kind` function `function` has; -1 on a bad index. */
QATTN_RT_EXPORT int64_t qattnRtGetNumTensors(const QAttnRtArtifact *artifact,
                                             int64_t function, int32_t kind);
/* Tensor `index` of `kind`: its name, dtype, rank and shape (pointers valid
 * until qattnRtClose). A size that the manifest names by a symbol is -1 in
 * `shape`; qattnRtGetTensorSymbol gives the symbol, qattnRtGetResultShapes
 * the results' sizes for given arguments. Returns 0, or 1 on a bad index. */
QATTN_RT_EXPORT int qattnRtGetTensor(const QAttnRtArtifact *artifact,
                                     int64_t function, int32_t kind,
                                     int64_t index, const char **name,
                                     int32_t *dtype, int32_t *rank,
                                     const int64_t **shape);

/* The symbol that names the size of dimension `dim` of tensor `index` of
 * `kind` ("B"), or "" if that size is static (valid until qattnRtClose).
 * NULL on a bad index. */
QATTN_RT_EXPORT const char *qattnRtGetTensorSymbol(
    const QAttnRtArtifact *artifact, int64_t function, int32_t kind,
    int64_t index, int32_t dim);

/* The shapes of function `function`'s results for arguments of the given
 * shapes: each symbol binds to the size of the argument dimension where it
 * first occurs, and every other occurrence must have that size (at least
 * 1). Reads the `rank` and `shape` of each argument, not its `data` or
 * `dtype`. Writes the results' shapes one after another, in manifest order,
 * to `resultShapes[0..numSizes)`; `numSizes` must be the sum of the results'
 * ranks. Allocate the results with these shapes, then call qattnRtRun or
 * qattnRtRunHost; for a function without symbols they are the manifest's.
 * Returns 0, or 1 (nothing written) with the reason in
 * qattnRtGetLastError(): a wrong count, rank or static size, or a symbol
 * given two sizes (naming the argument, the dimension and both sizes). */
QATTN_RT_EXPORT int qattnRtGetResultShapes(const QAttnRtArtifact *artifact,
                                           int64_t function,
                                           const QAttnRtTensor *args,
                                           int64_t numArgs,
                                           int64_t *resultShapes,
                                           int64_t numSizes);

/* Runs function `function` on the caller's buffers, arguments then results
 * in manifest order. Checks the counts, dtypes, shapes and pointers first and
 * runs nothing if one is wrong; the arguments bind the symbols, and the
 * results must have the shapes qattnRtGetResultShapes gives.
 *   cpu:  host pointers; returns when the results are written; `stream`
 *         must be NULL.
 *   cuda: device pointers of the artifact's device; enqueues the launches on
 *         `stream` (a CUstream of the primary context; NULL: the legacy
 *         default stream) and returns without waiting. The bound sizes give
 *         the launch grids (docs/ARTIFACT.md, "Symbolic sizes"). A
 *         function's scratch buffers are shared by its calls: do not run one
 *         function on two streams at once. A call at sizes larger than any
 *         before grows the buffers whose shapes have symbols (waiting for
 *         the device's pending work); see qattnRtReserve, or pass a
 *         workspace to qattnRtRunWorkspace.
 * Returns 0, or 1 with the reason in qattnRtGetLastError(). */
QATTN_RT_EXPORT int qattnRtRun(QAttnRtArtifact *artifact, int64_t function,
                               const QAttnRtTensor *args, int64_t numArgs,
                               const QAttnRtTensor *results,
                               int64_t numResults, void *stream);

/* Prepares function `function` for calls with arguments of the given shapes
 * (their `rank` and `shape`; not `data` or `dtype`), which bind the symbols
 * as qattnRtGetResultShapes does. cuda: sizes the scratch buffers whose
 * shapes have symbols for these sizes, growing them where they are smaller,
 * so that later calls at these sizes or smaller allocate nothing; do it at
 * the largest sizes before capturing a CUDA graph, during which a buffer
 * cannot grow (qattnRtRun fails then), and which must not be replayed after
 * a growth (it holds the old addresses). cpu: checks the shapes only.
 * Launches nothing. Returns 0, or 1 with the reason in
 * qattnRtGetLastError(). */
QATTN_RT_EXPORT int qattnRtReserve(QAttnRtArtifact *artifact, int64_t function,
                                   const QAttnRtTensor *args, int64_t numArgs);

/* The bytes of the workspace that qattnRtRunWorkspace needs for arguments
 * of the given shapes (as qattnRtReserve takes them) into `*bytes`: the
 * function's scratch buffers, each at a 256-byte aligned offset (qattn-run
 * --plan-only prints the layout). 0 for a cpu function or one without
 * buffers. Returns 0, or 1 with the reason in qattnRtGetLastError(). */
QATTN_RT_EXPORT int qattnRtGetWorkspaceSize(const QAttnRtArtifact *artifact,
                                            int64_t function,
                                            const QAttnRtTensor *args,
                                            int64_t numArgs, int64_t *bytes);

/* qattnRtRun with the scratch buffers in the caller's device memory
 * `workspace` (256-byte aligned, at least qattnRtGetWorkspaceSize bytes at
 * these sizes) instead of the function's own: it allocates nothing and never
 * grows anything, so calls with distinct workspaces may run on different
 * streams at once, and a CUDA graph may capture calls at any sizes the
 * workspace holds. The workspace's contents before the call do not matter;
 * the call owns it until its launches finish on `stream`. cpu: as
 * qattnRtRun (the workspace is not used). Returns 0, or 1 with the reason in
 * qattnRtGetLastError() (a null, misaligned or short workspace among them),
 * having launched nothing. */
QATTN_RT_EXPORT int
qattnRtRunWorkspace(QAttnRtArtifact *artifact, int64_t function,
                    const QAttnRtTensor *args, int64_t numArgs,
                    const QAttnRtTensor *results, int64_t numResults,
                    void *stream, void *workspace, int64_t bytes);

/* Runs function `function` on host buffers for any target: copies the
 * arguments in (cuda: to device memory the runtime owns, results poisoned
 * with NaN first), runs, waits, and copies the results out, as qattn-run
 * does. Returns 0 or 1 as qattnRtRun. */
QATTN_RT_EXPORT int qattnRtRunHost(QAttnRtArtifact *artifact, int64_t function,
                                   const QAttnRtTensor *args, int64_t numArgs,
                                   const QAttnRtTensor *results,
                                   int64_t numResults);

#ifdef __cplusplus
}
#endif

#endif /* QATTN_RUNTIME_CAPI_H */
