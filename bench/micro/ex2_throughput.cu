// Throughput of the exponential on the MUFU pipe: ex2.approx.ftz.f32 against
// ex2.approx.f16x2 (two values per instruction), in instructions and in
// values per SM per clock. Eight independent chains per thread, 8 CTAs of 256
// threads per SM.
#include <cstdio>
#include <cuda_runtime.h>

__device__ __forceinline__ float ex2f(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ unsigned ex2h2(unsigned x) {
  unsigned y;
  asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}

__global__ void chainsF32(float *out, int iters) {
  float a[8];
  for (int j = 0; j < 8; ++j)
    a[j] = -(threadIdx.x + j) * 1e-4f;
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      a[j] = ex2f(a[j]) - 1.0f; // stays in (-1, 0]
  float s = 0;
  for (int j = 0; j < 8; ++j)
    s += a[j];
  if (s == 12345.f)
    out[0] = s;
}

__global__ void chainsF16x2(float *out, int iters) {
  unsigned a[8];
  for (int j = 0; j < 8; ++j)
    a[j] = 0xB800B800u + threadIdx.x + j; // two halves near -0.5
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      a[j] = ex2h2(a[j]) ^ 0x80008000u; // negate both halves
  unsigned s = 0;
  for (int j = 0; j < 8; ++j)
    s += a[j];
  if (s == 12345u)
    out[0] = s;
}

int main() {
  float *out;
  cudaMalloc(&out, 4);
  int sms, khz;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int iters = 4096;
  dim3 grid(sms * 8), block(256);
  for (int half = 0; half < 2; ++half) {
    float ms = 0;
    for (int r = 0; r < 3; ++r) { // the last of three runs
      cudaEventRecord(e0);
      if (half)
        chainsF16x2<<<grid, block>>>(out, iters);
      else
        chainsF32<<<grid, block>>>(out, iters);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      cudaEventElapsedTime(&ms, e0, e1);
    }
    double instructions = double(grid.x) * block.x * iters * 8;
    double perSmClock = instructions / (ms * 1e-3) / sms / (khz * 1e3);
    printf("%-20s %.3f ms, %.2f instructions/SM/clock, %.2f values/SM/clock "
           "(clock %d MHz)\n",
           half ? "ex2.approx.f16x2" : "ex2.approx.ftz.f32", ms, perSmClock,
           perSmClock * (half ? 2 : 1), khz / 1000);
  }
  return 0;
}
