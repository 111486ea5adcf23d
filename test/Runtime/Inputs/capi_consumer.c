/* A C program over the runtime's C ABI (qattn/Runtime/CApi.h): lists the
 * fake artifact's functions and signatures, runs copy_f32 in place, and makes
 * every kind of mistake, printing the error strings. Compiled as C99, so the
 * header is checked to be C. */
#include "qattn/Runtime/CApi.h"

#include <stdio.h>
#include <string.h>

static const char *dtypeName(int32_t code) {
  static const char *names[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i8"};
  return code >= 0 && code < 7 ? names[code] : "?";
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  printf("abi %d\n", qattnRtGetAbiVersion());
  QAttnRtArtifact *bad = qattnRtOpen("/nonexistent-qattn-dir", 0, 0);
  printf("open missing: %s | %s\n", bad ? "non-null" : "NULL", qattnRtGetLastError());

  QAttnRtArtifact *art = qattnRtOpen(argv[1], 0, 0);
  if (!art) {
    printf("open failed: %s\n", qattnRtGetLastError());
    return 1;
  }
  printf("target %s, %lld functions\n", qattnRtGetTarget(art),
         (long long)qattnRtGetNumFunctions(art));
  int64_t f = qattnRtFindFunction(art, "copy_f32");
  for (int kind = QATTN_RT_ARG; kind <= QATTN_RT_RESULT; ++kind) {
    for (int64_t i = 0; i < qattnRtGetNumTensors(art, f, kind); ++i) {
      const char *name;
      int32_t dtype, rank;
      const int64_t *shape;
      qattnRtGetTensor(art, f, kind, i, &name, &dtype, &rank, &shape);
      printf("%s %s: %s [", kind == QATTN_RT_ARG ? "arg" : "result", name,
             dtypeName(dtype));
      for (int32_t d = 0; d < rank; ++d)
        printf("%s%lld", d ? ", " : "", (long long)shape[d]);
      printf("]\n");
    }
  }

  float x[30], y[30];
  for (int i = 0; i < 30; ++i)
    x[i] = (float)i * 0.5f, y[i] = -1.0f;
  int64_t shape[3] = {2, 3, 5};
  QAttnRtTensor in = {x, QATTN_RT_F32, 3, shape};
  QAttnRtTensor out = {y, QATTN_RT_F32, 3, shape};
  int rc = qattnRtRun(art, f, &in, 1, &out, 1, NULL);
  printf("run: %d, copied %s\n", rc, memcmp(x, y, sizeof x) ? "wrong" : "right");

  QAttnRtTensor wrongType = {x, QATTN_RT_F16, 3, shape};
  rc = qattnRtRun(art, f, &wrongType, 1, &out, 1, NULL);
  printf("wrong dtype: %d | %s\n", rc, qattnRtGetLastError());
  int64_t shape2[3] = {2, 3, 4};
  QAttnRtTensor wrongShape = {x, QATTN_RT_F32, 3, shape2};
  rc = qattnRtRun(art, f, &wrongShape, 1, &out, 1, NULL);
  printf("wrong shape: %d | %s\n", rc, qattnRtGetLastError());
  QAttnRtTensor null = {NULL, QATTN_RT_F32, 3, shape};
  rc = qattnRtRun(art, f, &null, 1, &out, 1, NULL);
  printf("null: %d | %s\n", rc, qattnRtGetLastError());
  rc = qattnRtRun(art, f, &in, 1, &out, 1, (void *)16);
  printf("stream: %d | %s\n", rc, qattnRtGetLastError());
  QAttnRtTensor badCode = {x, 42, 3, shape};
  rc = qattnRtRun(art, f, &badCode, 1, &out, 1, NULL);
  printf("bad dtype code: %d | %s\n", rc, qattnRtGetLastError());
  rc = qattnRtRun(art, 99, &in, 1, &out, 1, NULL);
  printf("bad function: %d | %s\n", rc, qattnRtGetLastError());
  printf("find missing: %lld | %s\n", (long long)qattnRtFindFunction(art, "nope"),
         qattnRtGetLastError());

  for (int i = 0; i < 30; ++i)
    y[i] = -1.0f;
  rc = qattnRtRunHost(art, f, &in, 1, &out, 1);
  printf("run host: %d, copied %s\n", rc, memcmp(x, y, sizeof x) ? "wrong" : "right");

  /* A cpu function takes no workspace: 0 bytes, and a run with one is a plain run. */
  int64_t bytes = -1;
  rc = qattnRtGetWorkspaceSize(art, f, &in, 1, &bytes);
  printf("workspace size: %d, %lld bytes\n", rc, (long long)bytes);
  rc = qattnRtGetWorkspaceSize(art, f, &wrongShape, 1, &bytes);
  printf("workspace size, wrong shape: %d | %s\n", rc, qattnRtGetLastError());
  for (int i = 0; i < 30; ++i)
    y[i] = -1.0f;
  rc = qattnRtRunWorkspace(art, f, &in, 1, &out, 1, NULL, NULL, 0);
  printf("run workspace: %d, copied %s\n", rc, memcmp(x, y, sizeof x) ? "wrong" : "right");
  qattnRtClose(art);
  qattnRtClose(NULL);
  return 0;
}
