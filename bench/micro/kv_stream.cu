// Read bandwidth of the decode kernel's cache stream without its math (the
// cache of kv_common.cuh, 16 keys per step). Variants:
//  - token-major ([B][N][8 heads][64 B], the format's layout), each warp its
//    head's 64 B of each 512-B row through its own cp.async ring; the warps
//    of a CTA are consecutive key slices of one head;
//  - head-major ([B][8 heads][N][64 B]), the same ring;
//  - token-major with the .L2::128B or .L2::256B prefetch hint;
//  - token-major, a CTA of 8 warps (the 8 heads of a key slice) copying
//    whole 512-B rows together, one barrier per step.
// Cold L2 before each run; min and mean of 30.
#include "kv_common.cuh"

constexpr int kStages = 4, kWarps = 4;

// A warp per (batch, head, key slice), slices fastest.
template <bool TokenMajor, int Prefetch>
__global__ void __launch_bounds__(128, 4)
perWarpRing(const char *k, const char *v, long n, int splits, float *sink) {
  __shared__ __align__(16) char ring[kWarps][kStages][2][kStepKeys * kRowBytes];
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  long task = long(blockIdx.x) * kWarps + w;
  int split = task % splits;
  long bh = task / splits, b = bh / kHeads;
  int h = bh % kHeads;
  Slice slice = sliceOf(split, splits, n);
  auto source = [&](const char *base, long key, int chunk) {
    long row = TokenMajor ? (b * n + key) * kHeads + h : (b * kHeads + h) * n + key;
    return base + row * kRowBytes + chunk * 16;
  };
  auto issue = [&](long j, int slot) {
    for (int i = 0; i < 2; ++i) {
      int c = lane + 32 * i; // 64 pieces of 16 B: key c / 4, piece c % 4
      long key = clampKey(j + c / 4, n);
      copy16<Prefetch>(&ring[w][slot][0][c * 16], source(k, key, c % 4));
      copy16<Prefetch>(&ring[w][slot][1][c * 16], source(v, key, c % 4));
    }
    commitCopies();
  };
  unsigned acc = 0;
  runRing<kStages>(slice, issue, [] { __syncwarp(); }, [&](int slot) {
    const unsigned *p = (const unsigned *)ring[w][slot][0];
    for (int i = 0; i < 16; ++i)
      acc ^= p[lane + 32 * i];
  });
  if (acc == 0x12345678u)
    sink[0] = acc;
}

// A CTA of 8 warps per (batch, key slice): each step it copies 16 whole
// 512-B token rows of K and V (a warp 2 rows, 512 B per instruction).
__global__ void __launch_bounds__(256, 2)
wholeRows(const char *k, const char *v, long n, int splits, float *sink) {
  constexpr int kSlots = 3, kRow = kHeads * kRowBytes;
  __shared__ __align__(16) char ring[kSlots][2][kStepKeys * kRow];
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  int split = blockIdx.x % splits;
  long b = blockIdx.x / splits;
  Slice slice = sliceOf(split, splits, n);
  auto issue = [&](long j, int slot) {
    for (int i = 0; i < 2; ++i) {
      int r = 2 * w + i;
      long key = clampKey(j + r, n);
      copy16<0>(&ring[slot][0][r * kRow + lane * 16], k + (b * n + key) * kRow + lane * 16);
      copy16<0>(&ring[slot][1][r * kRow + lane * 16], v + (b * n + key) * kRow + lane * 16);
    }
    commitCopies();
  };
  unsigned acc = 0;
  runRing<kSlots>(slice, issue, [] { __syncthreads(); }, [&](int slot) {
    const unsigned *p = (const unsigned *)ring[slot][0];
    for (int i = 0; i < 16; ++i)
      acc ^= p[(i * kRow + w * kRowBytes) / 4 + lane % 16];
  });
  if (acc == 0x12345678u)
    sink[0] = acc;
}

int main() {
  Cache c;
  int grid = (c.batch * kHeads * c.splits + kWarps - 1) / kWarps;
  const char *names[] = {"token-major", "head-major", "token-major L2::128B",
                         "token-major L2::256B", "token-major CTA rows"};
  for (int m = 0; m < 5; ++m) {
    float best, mean;
    timeRuns(c, 30, [&] {
      if (m == 0)
        perWarpRing<true, 0><<<grid, 128>>>(c.k, c.v, c.keys, c.splits, c.sink);
      else if (m == 1)
        perWarpRing<false, 0><<<grid, 128>>>(c.k, c.v, c.keys, c.splits, c.sink);
      else if (m == 2)
        perWarpRing<true, 128><<<grid, 128>>>(c.k, c.v, c.keys, c.splits, c.sink);
      else if (m == 3)
        perWarpRing<true, 256><<<grid, 128>>>(c.k, c.v, c.keys, c.splits, c.sink);
      else
        wholeRows<<<c.batch * c.splits, 256>>>(c.k, c.v, c.keys, c.splits, c.sink);
    }, best, mean);
    printf("%-22s: B%ld N%ld 8 heads x 64 B K+V (%.0f MB): min %.1f us, mean %.1f us, "
           "%.2f TB/s (min)\n",
           names[m], c.batch, c.keys, 2.0 * c.bytes / 1e6, best * 1e3, mean * 1e3,
           c.terabytesPerSecond(best));
  }
  return reportErrors();
}
