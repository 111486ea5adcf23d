// Hand-written kernels in the calling convention of qattn's cuda target
// (docs/ARTIFACT.md, "Target cuda"): one .entry per launch, every parameter
// a plain pointer to a dense row-major tensor whose shape is fixed at
// compile time, as the manifest fixes it, or (the last two kernels) sized by
// 32-bit size parameters. They validate the runtime's cuda path (qattn-run,
// CudaArtifact) before the compiler emits any kernel.
//
// Built on the GPU machine by selftest.sh:
//   nvcc -cubin -arch=sm_90a selftest.cu    (and -ptx for the JIT fallback)
// The shapes below must match manifest.json.

// copy_f32: y = x for x, y of shape [4, 1000, 33]. The launch's grid decides
// how much is copied, so the manifest's "copy_partial" (half the grid) leaves
// half of y unwritten, which qattn-run must report as NaN.
constexpr long kCopyElements = 4L * 1000 * 33;

extern "C" __global__ void copy_f32(const float *__restrict__ x,
                                    float *__restrict__ y) {
  long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < kCopyElements)
    y[i] = x[i];
}

// Causal grouped-query attention in two launches through a scratch buffer:
//   q [B, HQ, NQ, D], k and v [B, HKV, NK, D], out [B, HQ, NQ, D] (f32),
//   scores [B, HQ, NQ, NK] (f32 scratch),
// with query head h reading KV head h / (HQ / HKV) and key j masked for
// query i when j > i + (NK - NQ), as qattn-run's float64 reference does.
constexpr int B = 2, HQ = 8, HKV = 2, NQ = 64, NK = 512, D = 64;
constexpr float kScale = 0.125f;
constexpr int kGroup = HQ / HKV;
static_assert(B * HQ == 16, "the launches' grids in manifest.json");

// Launch 0: grid [NK / 128, NQ, B * HQ], block [128, 1, 1]. One thread per
// (query, key): scores = scale * q . k, or -inf where masked.
extern "C" __global__ void attn_scores(const float *__restrict__ q,
                                       const float *__restrict__ k,
                                       float *__restrict__ scores) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y;
  int bh = blockIdx.z, b = bh / HQ, h = bh % HQ;
  if (j >= NK)
    return;
  const float *qi = q + ((long(b) * HQ + h) * NQ + i) * D;
  const float *kj = k + ((long(b) * HKV + h / kGroup) * NK + j) * D;
  float dot = 0.f;
  for (int d = 0; d < D; ++d)
    dot = fmaf(qi[d], kj[d], dot);
  float s = j > i + (NK - NQ) ? -INFINITY : kScale * dot;
  scores[((long(b) * HQ + h) * NQ + i) * NK + j] = s;
}

// Launch 1: grid [NQ, B * HQ, 1], block [D, 1, 1], dynamic shared memory
// (NK * D + NK) floats = 133120 bytes, more than the default 48 KiB, so the
// runtime must raise the kernel's limit. Each block stages its KV head's V
// (needlessly: it is here to use the memory) and one row of probabilities,
// then thread d computes out[.., d] = sum_j p_j v[j][d] / sum_j p_j.
constexpr int kSharedFloats = NK * D + NK;
static_assert(kSharedFloats * sizeof(float) == 133120,
              "shared_bytes of attn_softmax_pv in manifest.json");

extern "C" __global__ void attn_softmax_pv(const float *__restrict__ scores,
                                           const float *__restrict__ v,
                                           float *__restrict__ out) {
  extern __shared__ float shared[];
  float *vs = shared;      // [NK, D]
  float *p = shared + NK * D; // [NK]
  __shared__ float reduce[D];
  int i = blockIdx.x, bh = blockIdx.y, b = bh / HQ, h = bh % HQ;
  int t = threadIdx.x;
  const float *vh = v + (long(b) * HKV + h / kGroup) * NK * D;
  for (int e = t; e < NK * D; e += D)
    vs[e] = vh[e];
  const float *row = scores + ((long(b) * HQ + h) * NQ + i) * NK;

  float m = -INFINITY;
  for (int j = t; j < NK; j += D)
    m = fmaxf(m, row[j]);
  reduce[t] = m;
  __syncthreads();
  for (int stride = D / 2; stride > 0; stride /= 2) {
    if (t < stride)
      reduce[t] = fmaxf(reduce[t], reduce[t + stride]);
    __syncthreads();
  }
  m = reduce[0];
  __syncthreads();

  float sum = 0.f;
  for (int j = t; j < NK; j += D) {
    float e = expf(row[j] - m);
    p[j] = e;
    sum += e;
  }
  reduce[t] = sum;
  __syncthreads();
  for (int stride = D / 2; stride > 0; stride /= 2) {
    if (t < stride)
      reduce[t] += reduce[t + stride];
    __syncthreads();
  }
  sum = reduce[0];

  float acc = 0.f;
  for (int j = 0; j < NK; ++j)
    acc = fmaf(p[j], vs[j * D + t], acc);
  out[((long(b) * HQ + h) * NQ + i) * D + t] = acc / sum;
}

// Shape-generic kernels (docs/ARTIFACT.md, "Symbolic sizes"): the sizes come
// from {"dim": SYM} parameters, 32-bit integers, and the manifest's grids
// are expressions over the same symbols, which the runtime evaluates at each
// call.

// copy_rows_f32: y = x for x, y of shape [B, 1000, 33], on the grid
// [ceil_div(B*33000, 256), 1, 1]. The manifest's "copy_dims" runs it twice,
// through a scratch buffer of shape [B, 1000, 33], so a grid or a buffer
// sized for a smaller B leaves part of y unwritten (NaN).
constexpr long kRowElements = 1000L * 33;

extern "C" __global__ void copy_rows_f32(const float *__restrict__ x,
                                         float *__restrict__ y, int b) {
  long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < long(b) * kRowElements)
    y[i] = x[i];
}

// grid_probe: on the grid [N, B, 2], block (x, y, z) writes ids[y][z][x] =
// {x, y, z, check} of ids [B, 2, N, 4] (i32), where check is 1000 * b + n if
// the grid is [n, b, 2] for the parameters b and n, else -1. device_api.cu
// reads it back.
extern "C" __global__ void grid_probe(int *__restrict__ ids, int b, int n) {
  if (threadIdx.x != 0)
    return;
  bool ok =
      gridDim.x == unsigned(n) && gridDim.y == unsigned(b) && gridDim.z == 2;
  int *entry = ids + ((long(blockIdx.y) * 2 + blockIdx.z) * n + blockIdx.x) * 4;
  entry[0] = blockIdx.x;
  entry[1] = blockIdx.y;
  entry[2] = blockIdx.z;
  entry[3] = ok ? 1000 * b + n : -1;
}
