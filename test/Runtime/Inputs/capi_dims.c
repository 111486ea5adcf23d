/* The C ABI on a function with symbolic sizes (Inputs/dims-manifest.json):
 * reading the symbols, asking for the results' shapes for two batch sizes,
 * running the function at both, and the errors a caller can make. C99. */
#include "qattn/Runtime/CApi.h"

#include <stdio.h>
#include <string.h>

static void printShape(const int64_t *shape, int32_t rank) {
  printf("[");
  for (int32_t d = 0; d < rank; ++d)
    printf("%s%lld", d ? ", " : "", (long long)shape[d]);
  printf("]");
}

/* copy_f32 x [B, 3, 5] -> y [B, 3, 5] at batch `b`: shapes, run, compare. */
static void runCopy(QAttnRtArtifact *art, int64_t f, int64_t b) {
  static float x[8 * 15], y[8 * 15];
  int64_t shape[3] = {b, 3, 5}, out[3] = {0, 0, 0};
  QAttnRtTensor in = {x, QATTN_RT_F32, 3, shape};
  int rc = qattnRtGetResultShapes(art, f, &in, 1, out, 3);
  printf("B=%lld: result shapes %d ", (long long)b, rc);
  printShape(out, 3);
  for (int i = 0; i < b * 15; ++i)
    x[i] = (float)i, y[i] = -1.0f;
  QAttnRtTensor res = {y, QATTN_RT_F32, 3, out};
  rc = qattnRtRun(art, f, &in, 1, &res, 1, NULL);
  printf(", run %d, copied %s\n", rc,
         memcmp(x, y, (size_t)(b * 15) * sizeof(float)) ? "wrong" : "right");
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  QAttnRtArtifact *art = qattnRtOpen(argv[1], 0, 0);
  if (!art) {
    printf("open failed: %s\n", qattnRtGetLastError());
    return 1;
  }
  int64_t f = qattnRtFindFunction(art, "attention_causal");
  for (int kind = QATTN_RT_ARG; kind <= QATTN_RT_RESULT; ++kind)
    for (int64_t i = 0; i < qattnRtGetNumTensors(art, f, kind); ++i) {
      const char *name;
      int32_t dtype, rank;
      const int64_t *shape;
      qattnRtGetTensor(art, f, kind, i, &name, &dtype, &rank, &shape);
      printf("%s %s: ", kind == QATTN_RT_ARG ? "arg" : "result", name);
      printShape(shape, rank);
      printf(" symbols");
      for (int32_t d = 0; d < rank; ++d)
        printf(" '%s'", qattnRtGetTensorSymbol(art, f, kind, i, d));
      printf("\n");
    }
  const char *bad = qattnRtGetTensorSymbol(art, f, QATTN_RT_ARG, 0, 4);
  printf("bad dim: %s | %s\n", bad ? bad : "NULL", qattnRtGetLastError());

  /* The result shapes of attention for q [2, 4, 3, 16], k/v [2, 2, 7, 16]. */
  int64_t q[4] = {2, 4, 3, 16}, kv[4] = {2, 2, 7, 16}, out[4];
  QAttnRtTensor args[3] = {{NULL, QATTN_RT_F32, 4, q},
                           {NULL, QATTN_RT_F32, 4, kv},
                           {NULL, QATTN_RT_F32, 4, kv}};
  int rc = qattnRtGetResultShapes(art, f, args, 3, out, 4);
  printf("attention shapes: %d ", rc);
  printShape(out, 4);
  printf("\n");
  int64_t kv3[4] = {3, 2, 7, 16};
  args[2].shape = kv3;
  rc = qattnRtGetResultShapes(art, f, args, 3, out, 4);
  printf("mismatch: %d | %s\n", rc, qattnRtGetLastError());
  rc = qattnRtGetResultShapes(art, f, args, 3, out, 3);
  printf("room: %d | %s\n", rc, qattnRtGetLastError());
  rc = qattnRtGetResultShapes(art, f, args, 2, out, 4);
  printf("count: %d | %s\n", rc, qattnRtGetLastError());
  int64_t q5[4] = {2, 5, 3, 16};
  args[0].shape = q5;
  rc = qattnRtGetResultShapes(art, f, args, 3, out, 4);
  printf("static: %d | %s\n", rc, qattnRtGetLastError());

  int64_t copy = qattnRtFindFunction(art, "copy_f32");
  runCopy(art, copy, 2);
  runCopy(art, copy, 7);
  /* Arguments and results of one call must agree. */
  float x[2 * 15], y[3 * 15];
  int64_t s2[3] = {2, 3, 5}, s3[3] = {3, 3, 5};
  QAttnRtTensor in = {x, QATTN_RT_F32, 3, s2}, res = {y, QATTN_RT_F32, 3, s3};
  rc = qattnRtRun(art, copy, &in, 1, &res, 1, NULL);
  printf("result mismatch: %d | %s\n", rc, qattnRtGetLastError());
  rc = qattnRtRunHost(art, copy, &in, 1, &res, 1);
  printf("host result mismatch: %d | %s\n", rc, qattnRtGetLastError());
  qattnRtClose(art);
  return 0;
}
