/*===- fake_kernels.c - A hand-written "cpu" artifact library -------------===*
 *
 * Part of the qattn project.
 *
 *===----------------------------------------------------------------------===*
 *
 * Stands in for a library that qattn-compile would emit, so that qattn-run
 * can be tested without MLIR. Every function follows the calling convention
 * of docs/ARTIFACT.md: memref descriptors of the arguments, then of the
 * results. Each checks the descriptors it gets (offset 0, aligned ==
 * allocated, row-major strides) and, if one is wrong, returns without
 * writing its results, which qattn-run reports as NaN.
 *
 * Like a compiled library, it states each entry point's signature as the
 * string qattn_signature.SYMBOL (docs/ARTIFACT.md, "Verifying an artifact"),
 * which qattn-run compares with the manifest: compiled with
 * -DQATTN_FAKE_DIMS, those of Inputs/dims-manifest.json, else those of
 * Inputs/manifest.json and Inputs/wide-manifest.json.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <stdint.h>
#include <string.h>

/* An MLIR ranked memref descriptor: after the offset come sizes[rank], then
 * strides[rank]. */
typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
} Desc;

#define SIGNATURE(symbol, text)                                                \
  const char symbol##_signature[] __asm__("qattn_signature." #symbol) = text

#ifdef QATTN_FAKE_DIMS
SIGNATURE(_mlir_ciface_copy_f32, "(f32[B,3,5]) -> (f32[B,3,5])");
SIGNATURE(_mlir_ciface_attention_causal,
          "(f32[B,4,Nq,16], f32[B,2,Nk,16], f32[B,2,Nk,16]) -> "
          "(f32[B,4,Nq,16])");
SIGNATURE(_mlir_ciface_attention_full,
          "(f32[1,4,Nq,16], f32[1,2,Nk,16], f32[1,2,Nk,16]) -> "
          "(f32[1,4,Nq,16])");
#else
SIGNATURE(_mlir_ciface_copy_f32, "(f32[2,3,5]) -> (f32[2,3,5])");
SIGNATURE(_mlir_ciface_copy_f16, "(f16[4,8]) -> (f16[4,8])");
SIGNATURE(_mlir_ciface_copy_bf16, "(bf16[4,8]) -> (bf16[4,8])");
SIGNATURE(_mlir_ciface_unwritten, "(f32[2,3]) -> (f32[2,3])");
SIGNATURE(_mlir_ciface_dequant, "(i8[4,8], f32[4]) -> (f32[4,8])");
#define ATTENTION_SIGNATURE                                                    \
  "(f32[1,4,8,16], f32[1,2,12,16], f32[1,2,12,16]) -> (f32[1,4,8,16])"
SIGNATURE(_mlir_ciface_attention_causal, ATTENTION_SIGNATURE);
SIGNATURE(_mlir_ciface_attention_full, ATTENTION_SIGNATURE);
SIGNATURE(_mlir_ciface_attention_noscale, ATTENTION_SIGNATURE);
#define F32X8 "f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1]"
SIGNATURE(_mlir_ciface_wide,
          "(" F32X8 ", " F32X8 ", " F32X8 ", " F32X8 ", " F32X8 ", " F32X8
          ", " F32X8 ", f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], "
          "f32[1]) -> (f32[1])");
#endif

static int64_t dim(const Desc *d, int i) { return d->sizesAndStrides[i]; }

static int64_t numElements(const Desc *d, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= dim(d, i);
  return n;
}

/* Whether `d` describes a dense row-major rank-`rank` buffer as the calling
 * convention promises. */
static int isValid(const Desc *d, int rank) {
  if (d->allocated != d->aligned || d->offset != 0 || !d->aligned)
    return 0;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (d->sizesAndStrides[rank + i] != stride)
      return 0;
    stride *= d->sizesAndStrides[i];
  }
  return 1;
}

static void copyBytes(const Desc *in, Desc *out, int rank, size_t elemSize) {
  if (!isValid(in, rank) || !isValid(out, rank))
    return;
  memcpy(out->aligned, in->aligned, (size_t)numElements(in, rank) * elemSize);
}

/* copy: x f32 [2, 3, 5] -> y f32 [2, 3, 5]. */
void _mlir_ciface_copy_f32(Desc *x, Desc *y) { copyBytes(x, y, 3, 4); }

/* copy_f16, copy_bf16: [4, 8] 16-bit patterns. */
void _mlir_ciface_copy_f16(Desc *x, Desc *y) { copyBytes(x, y, 2, 2); }
void _mlir_ciface_copy_bf16(Desc *x, Desc *y) { copyBytes(x, y, 2, 2); }

/* unwritten: returns without writing its result. */
void _mlir_ciface_unwritten(Desc *x, Desc *y) {
  (void)x;
  (void)y;
}

/* dequant: codes i8 [4, 8] times per-row scales f32 [4] -> f32 [4, 8]. */
void _mlir_ciface_dequant(Desc *codes, Desc *scales, Desc *out) {
  if (!isValid(codes, 2) || !isValid(scales, 1) || !isValid(out, 2))
    return;
  const int8_t *c = codes->aligned;
  const float *s = scales->aligned;
  float *o = out->aligned;
  int64_t rows = dim(codes, 0), cols = dim(codes, 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      o[r * cols + j] = (float)c[r * cols + j] * s[r];
}

/* Naive f32 attention on [B, H, N, d] tensors, grouped-query when q has more
 * heads than k, with the causal mask aligned to the last key. */
static void attention(Desc *qd, Desc *kd, Desc *vd, Desc *od, float scale,
                      int causal) {
  if (!isValid(qd, 4) || !isValid(kd, 4) || !isValid(vd, 4) || !isValid(od, 4))
    return;
  const float *q = qd->aligned, *k = kd->aligned, *v = vd->aligned;
  float *o = od->aligned;
  int64_t B = dim(qd, 0), Hq = dim(qd, 1), Nq = dim(qd, 2);
  int64_t d = dim(qd, 3), Hkv = dim(kd, 1), Nk = dim(kd, 2);
  int64_t dv = dim(vd, 3);
  float scores[1024];
  if (Nk > 1024)
    return;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Nq; ++i) {
        int64_t kvh = h / (Hq / Hkv);
        int64_t visible = causal ? i + (Nk - Nq) + 1 : Nk;
        const float *qi = q + ((b * Hq + h) * Nq + i) * d;
        const float *kh = k + (b * Hkv + kvh) * Nk * d;
        const float *vh = v + (b * Hkv + kvh) * Nk * dv;
        float *oi = o + ((b * Hq + h) * Nq + i) * dv;
        float m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          float s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += qi[c] * kh[j * d + c];
          scores[j] = scale * s;
          m = fmaxf(m, scores[j]);
        }
        for (int64_t c = 0; c < dv; ++c)
          oi[c] = 0;
        for (int64_t j = 0; j < visible; ++j) {
          float w = expf(scores[j] - m);
          sum += w;
          for (int64_t c = 0; c < dv; ++c)
            oi[c] += w * vh[j * dv + c];
        }
        for (int64_t c = 0; c < dv; ++c)
          oi[c] /= sum;
      }
}

/* q [1, 4, 8, 16], k and v [1, 2, 12, 16] (GQA), scale 0.25. */
void _mlir_ciface_attention_causal(Desc *q, Desc *k, Desc *v, Desc *o) {
  attention(q, k, v, o, 0.25f, 1);
}
void _mlir_ciface_attention_full(Desc *q, Desc *k, Desc *v, Desc *o) {
  attention(q, k, v, o, 0.25f, 0);
}
/* The bug that the accuracy thresholds are for: the scale is forgotten. */
void _mlir_ciface_attention_noscale(Desc *q, Desc *k, Desc *v, Desc *o) {
  attention(q, k, v, o, 1.0f, 1);
}

/* wide: 63 arguments f32 [1] and their sum as result f32 [1], so that the
 * call takes the most memrefs qattn-run supports (64). */
#define ARGS8(p)                                                               \
  Desc *p##0, Desc *p##1, Desc *p##2, Desc *p##3, Desc *p##4, Desc *p##5,      \
      Desc *p##6, Desc *p##7
void _mlir_ciface_wide(ARGS8(a), ARGS8(b), ARGS8(c), ARGS8(d), ARGS8(e),
                       ARGS8(f), ARGS8(g), Desc *h0, Desc *h1, Desc *h2,
                       Desc *h3, Desc *h4, Desc *h5, Desc *h6, Desc *out) {
  Desc *all[63] = {a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4,
                   b5, b6, b7, c0, c1, c2, c3, c4, c5, c6, c7, d0, d1,
                   d2, d3, d4, d5, d6, d7, e0, e1, e2, e3, e4, e5, e6,
                   e7, f0, f1, f2, f3, f4, f5, f6, f7, g0, g1, g2, g3,
                   g4, g5, g6, g7, h0, h1, h2, h3, h4, h5, h6};
  float sum = 0;
  for (int i = 0; i < 63; ++i) {
    if (!isValid(all[i], 1))
      return;
    /* Weight argument i by i + 1, so that swapped arguments show. */
    sum += (float)(i + 1) * *(const float *)all[i]->aligned;
  }
  if (isValid(out, 1))
    *(float *)out->aligned = sum;
}
