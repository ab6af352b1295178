// C[i][j] = sum_k A[i][k] * B[j][k] for a kRowsA x 16 tile with both operands in shared memory,
// computed by the 256 threads of a block: the one small-GEMM shape of the absorbed MLA stages
// (queries x keys in the core, tokens x W_UK columns in q absorption, tokens x W_UV rows in the
// V projection).
#pragma once

#include <cuda_runtime.h>

namespace moe::cuda::mla {

// Each thread owns a 4 x 4 register tile (rows 4 * ia.. of A, 4 * jb.. of B) over one slice of
// k (float4 columns slice, slice + kSlices, ...): per step 8 float4 loads feed 64 FMAs. The
// kSlices lanes of a tile sit in one warp and are summed by an xor butterfly, so every lane of
// the tile ends with the full sums, added in a fixed order (deterministic).
// NOTE: lanes of one quarter-warp read consecutive float4 of one row: no bank conflicts.
template <int kRowsA>
struct TileDot {
  static constexpr int kThreads = 256;
  static constexpr int kTiles = (kRowsA / 4) * 4;
  static constexpr int kSlices = kThreads / kTiles;
  static_assert(kRowsA == 8 || kRowsA == 16, "A tile of 8 or 16 rows");
  static_assert(kSlices * kTiles == kThreads && kSlices <= 32 && kSlices >= 4,
                "a tile's slices must share one warp");

  __device__ static int tile() { return threadIdx.x / kSlices; }
  __device__ static int row_a() { return tile() / 4 * 4; }  // first A row of this thread's tile
  __device__ static int row_b() { return tile() % 4 * 4; }  // first B row
  __device__ static bool leader() { return threadIdx.x % kSlices == 0; }

  // A: [kRowsA][lda], B: [16][ldb] floats (lda, ldb multiples of 4, 16-byte aligned rows);
  // k4: float4 columns to sum over. All threads must call (warp shuffles).
  __device__ static void run(const float* A, int lda, const float* B, int ldb, int k4,
                             float (&c)[4][4]) {
    const int slice = threadIdx.x % kSlices;
    const float* a = A + row_a() * lda;
    const float* b = B + row_b() * ldb;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) c[i][j] = 0.f;
    for (int k = slice; k < k4; k += kSlices) {
      float4 av[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) av[r] = *reinterpret_cast<const float4*>(a + r * lda + 4 * k);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float4 bv = *reinterpret_cast<const float4*>(b + j * ldb + 4 * k);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float s = c[i][j];
          s = fmaf(av[i].x, bv.x, s);
          s = fmaf(av[i].y, bv.y, s);
          s = fmaf(av[i].z, bv.z, s);
          s = fmaf(av[i].w, bv.w, s);
          c[i][j] = s;
        }
      }
    }
#pragma unroll
    for (int o = kSlices / 2; o > 0; o >>= 1)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) c[i][j] += __shfl_xor_sync(0xffffffffu, c[i][j], o);
  }
};

}  // namespace moe::cuda::mla
