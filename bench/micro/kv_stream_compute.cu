// The decode kernel's cache stream (as kv_stream.cu, token-major) with a
// fake per-step load of `work` x 4 independent FMAs per lane, the warps of a
// CTA being the 4 consecutive KV heads of one key slice (as in the decode
// kernel's grid):
//  - each warp copies its head's 64 B of each token row into its own ring
//    (cp.async with .L2::128B), 2 or 4 stages;
//  - a fifth, producer warp copies the 4 heads' 256-B runs of each row into
//    the consumers' slots and hands them over with mbarriers (full: the
//    copies landed, cp.async.mbarrier.arrive; empty: the 4 consumers are
//    done), 4 or 6 stages.
#include <cstdio>
#include <cuda_runtime.h>
constexpr int H = 8, ROW = 64, STEP = 16, W = 4;
__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16pf(void* s, const void* g) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(sa(s)), "l"(g));
}
__device__ __forceinline__ void cp16(void* s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa(s)), "l"(g));
}
__device__ __forceinline__ void mbInit(unsigned long long* m, int n) { asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(sa(m)), "r"(n)); }
__device__ __forceinline__ void mbArrive(unsigned long long* m) { asm volatile("{ .reg .b64 t; mbarrier.arrive.shared.b64 t, [%0]; }" ::"r"(sa(m))); }
__device__ __forceinline__ void mbCpArrive(unsigned long long* m) { asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(sa(m))); }
__device__ __forceinline__ void mbWait(unsigned long long* m, unsigned phase) {
  asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], %1; @!p bra W; }" ::"r"(sa(m)), "r"(phase));
}
__device__ __forceinline__ float fake(const unsigned* p, int lane, int work) {
  float a = 0, b = 0, c = 0, d = 0; unsigned x = 0;
  for (int i = 0; i < 16; ++i) x ^= p[lane + 32 * i];
  float f = __uint_as_float((x & 0x007fffff) | 0x3f800000);
  for (int i = 0; i < work; ++i) { a = fmaf(a, f, 1.f); b = fmaf(b, f, 2.f); c = fmaf(c, f, 3.f); d = fmaf(d, f, 4.f); }
  return a + b + c + d;
}
struct Range { long b, h, j0, steps; };
__device__ Range rangeOf(long task, int splits, long n) {
  int split = task % splits; long bh = task / splits;
  long per = (n + splits - 1) / splits; per = (per + STEP - 1) / STEP * STEP;
  long j0 = split * per, j1 = j0 + per < n ? j0 + per : n;
  return {bh / H, bh % H, j0, (j1 - j0 + STEP - 1) / STEP};
}
// (a) per-warp rings; task = ((b, h), split) with h fastest among a CTA's warps.
template <int S>
__global__ void __launch_bounds__(128, 4) perWarp(const char* k, const char* v, long n, int splits, int work, float* out) {
  __shared__ __align__(16) char ring[W][S][2][STEP * ROW];
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  // CTA = (batch, head quad, split): warps = the quad's heads.
  long cta = blockIdx.x; int split = cta % splits; long bq = cta / splits;
  long b = bq / (H / W); int h = (bq % (H / W)) * W + w;
  long per = (n + splits - 1) / splits; per = (per + STEP - 1) / STEP * STEP;
  long j0 = split * per, j1 = j0 + per < n ? j0 + per : n; long steps = (j1 - j0 + STEP - 1) / STEP;
  auto issue = [&](long j, int s) {
    for (int i = 0; i < 2; ++i) {
      int c = lane + 32 * i; long key = j + c / 4; if (key > n - 1) key = n - 1;
      long off = ((b * n + key) * H + h) * ROW + (c % 4) * 16;
      cp16pf(&ring[w][s][0][c * 16], k + off); cp16pf(&ring[w][s][1][c * 16], v + off);
    }
    asm volatile("cp.async.commit_group;");
  };
  float acc = 0;
  for (int s = 0; s < S - 1; ++s) issue(j0 + s * STEP, s);
  for (long t = 0; t < steps; ++t) {
    __syncwarp();
    issue(j0 + (t + S - 1) * STEP, (t + S - 1) % S);
    asm volatile("cp.async.wait_group %0;" ::"n"(S - 1));
    __syncwarp();
    acc += fake((const unsigned*)ring[w][t % S][0], lane, work);
  }
  if (acc == 1234.5f) out[0] = acc;
}
// (b) producer warp 4 + consumer warps 0..3.
template <int S>
__global__ void __launch_bounds__(160, 3) producer(const char* k, const char* v, long n, int splits, int work, float* out) {
  __shared__ __align__(16) char ring[S][W][2][STEP * ROW];
  __shared__ unsigned long long full[S], empty[S];
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  long cta = blockIdx.x; int split = cta % splits; long bq = cta / splits;
  long b = bq / (H / W); int h0 = (bq % (H / W)) * W;
  long per = (n + splits - 1) / splits; per = (per + STEP - 1) / STEP * STEP;
  long j0 = split * per, j1 = j0 + per < n ? j0 + per : n; long steps = (j1 - j0 + STEP - 1) / STEP;
  if (threadIdx.x == 0) for (int s = 0; s < S; ++s) { mbInit(&full[s], 32); mbInit(&empty[s], W * 32); }
  __syncthreads();
  if (w == W) {
    for (long t = 0; t < steps; ++t) {
      int s = t % S;
      if (t >= S) mbWait(&empty[s], ((t / S) - 1) & 1);
      // 16 keys x 256 B of K and of V: lane = 16-byte piece of a 512-B pair of keys.
      for (int i = 0; i < 8; ++i) {
        int key = 2 * i + lane / 16, piece = lane % 16, hh = piece / 4, c = piece % 4;
        long kk = j0 + t * STEP + key; if (kk > n - 1) kk = n - 1;
        long off = ((b * n + kk) * H + h0) * ROW + piece * 16;
        cp16(&ring[s][hh][0][key * ROW + c * 16], k + off);
        cp16(&ring[s][hh][1][key * ROW + c * 16], v + off);
      }
      mbCpArrive(&full[s]);
    }
  } else {
    float acc = 0;
    for (long t = 0; t < steps; ++t) {
      int s = t % S;
      mbWait(&full[s], (t / S) & 1);
      acc += fake((const unsigned*)ring[s][w][0], lane, work);
      mbArrive(&empty[s]);
    }
    if (acc == 1234.5f) out[0] = acc;
  }
}
int main() {
  long B = 8, n = 32768; int splits = 33;
  size_t bytes = B * n * H * ROW;
  char *k, *v; float* o; cudaMalloc(&k, bytes); cudaMalloc(&v, bytes); cudaMalloc(&o, 4);
  cudaMemset(k, 1, bytes); cudaMemset(v, 2, bytes);
  char* flush; size_t fb = 256 << 20; cudaMalloc(&flush, fb);
  int grid = B * (H / W) * splits;
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int work : {0, 64, 128, 192}) for (int m = 0; m < 4; ++m) {
    float best = 1e9; int reps = 20;
    for (int r = 0; r < reps + 3; ++r) {
      cudaMemset(flush, r, fb);
      cudaEventRecord(e0);
      if (m == 0) perWarp<2><<<grid, 128>>>(k, v, n, splits, work, o);
      else if (m == 1) perWarp<4><<<grid, 128>>>(k, v, n, splits, work, o);
      else if (m == 2) producer<4><<<grid, 160>>>(k, v, n, splits, work, o);
      else producer<6><<<grid, 160>>>(k, v, n, splits, work, o);
      cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) best = ms < best ? ms : best;
    }
    const char* names[] = {"per-warp rings, 2 stages, L2::128B", "per-warp rings, 4 stages, L2::128B", "producer warp, 4 stages", "producer warp, 6 stages"};
    printf("work %3d x4 FMA/step  %-36s: %.1f us, %.2f TB/s\n", work, names[m], best * 1e3, 2.0 * bytes / (best * 1e-3) / 1e12);
  }
  cudaError_t e = cudaGetLastError(); if (e) printf("error %s\n", cudaGetErrorString(e));
  return 0;
}
