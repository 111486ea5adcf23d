// What kv_stream.cu and kv_stream_compute.cu share: the modelled cache (B8,
// 8 KV heads, N32K, 64 B of K codes and 64 B of V codes per head and key:
// d = 128 at 4 bits), the decode kernel's 16-key steps and key slices, the
// 16-byte cp.async copies, and the timing loop.
#pragma once
#include <cstdio>
#include <cuda_runtime.h>

constexpr int kHeads = 8, kRowBytes = 64, kStepKeys = 16;

__device__ __forceinline__ unsigned sharedAddress(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// cp.async.cg of 16 bytes; Prefetch = 128 or 256 adds that L2 prefetch hint.
template <int Prefetch>
__device__ __forceinline__ void copy16(void *dst, const void *src) {
  unsigned to = sharedAddress(dst);
  if (Prefetch == 256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(to), "l"(src));
  else if (Prefetch == 128)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(to), "l"(src));
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to), "l"(src));
}
__device__ __forceinline__ void commitCopies() {
  asm volatile("cp.async.commit_group;");
}
template <int Pending> __device__ __forceinline__ void waitCopies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending));
}

// Key slice `split` of `splits` over n keys, in whole steps (as qattn-tile's
// slices, which start at multiples of 16 keys).
struct Slice {
  long first, steps;
};
__device__ __forceinline__ Slice sliceOf(int split, int splits, long n) {
  long per = (n + splits - 1) / splits;
  per = (per + kStepKeys - 1) / kStepKeys * kStepKeys;
  long first = split * per, end = first + per < n ? first + per : n;
  return {first, (end - first + kStepKeys - 1) / kStepKeys};
}
__device__ __forceinline__ long clampKey(long key, long n) {
  return key < n ? key : n - 1;
}

// A ring of Slots slots over a key slice: steps t+1 .. t+Slots-1 in flight
// while step t is consumed. issue(firstKey, slot) issues and commits one
// step's copies; sync() orders them with the readers (a warp's or a CTA's
// barrier); consume(slot) reads one.
template <int Slots, class Issue, class Sync, class Consume>
__device__ __forceinline__ void runRing(const Slice &slice, Issue issue, Sync sync,
                                        Consume consume) {
  for (int s = 0; s < Slots - 1; ++s)
    issue(slice.first + s * kStepKeys, s);
  for (long t = 0; t < slice.steps; ++t) {
    issue(slice.first + (t + Slots - 1) * kStepKeys, (t + Slots - 1) % Slots);
    waitCopies<Slots - 1>();
    sync();
    consume(int(t % Slots));
    sync(); // every reader is done before the slot is refilled
  }
}

// The modelled cache on the device, plus a 256-MiB buffer whose memset
// flushes the L2 before each timed run.
struct Cache {
  long batch = 8, keys = 32768;
  int splits = 33; // qattn-tile's choice at B8 N32K
  size_t bytes = 0;
  char *k = nullptr, *v = nullptr, *flush = nullptr;
  float *sink = nullptr;
  static constexpr size_t kFlushBytes = size_t(256) << 20;
  Cache() {
    bytes = size_t(batch) * keys * kHeads * kRowBytes;
    cudaMalloc(&k, bytes);
    cudaMalloc(&v, bytes);
    cudaMalloc(&flush, kFlushBytes);
    cudaMalloc(&sink, sizeof(float));
    cudaMemset(k, 1, bytes);
    cudaMemset(v, 2, bytes);
  }
  // K and V bytes per second at `ms`, in TB/s.
  double terabytesPerSecond(float ms) const { return 2.0 * bytes / (ms * 1e-3) / 1e12; }
};

// Min and mean milliseconds of `reps` runs of `launch` (after 3 warm-ups),
// each on a flushed L2.
template <class Launch>
void timeRuns(const Cache &cache, int reps, Launch launch, float &best, float &mean) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  best = 1e9f;
  float sum = 0;
  for (int r = 0; r < reps + 3; ++r) {
    cudaMemset(cache.flush, r, Cache::kFlushBytes);
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 3) {
      best = ms < best ? ms : best;
      sum += ms;
    }
  }
  mean = sum / reps;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

inline int reportErrors() {
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess)
    e = cudaGetLastError();
  if (e != cudaSuccess) {
    fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
