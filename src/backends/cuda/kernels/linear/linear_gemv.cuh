// Small-M linear for FP8 block-128 and NVFP4 weights (decode, M <= kLinearGemvMaxM).
//
// Pipeline: K is walked in chunks of kGemvChunk = 1024. Per chunk a lane owns one 16-byte unit
// per weight row (NVFP4: 32 codes; FP8: two units of 16 codes, 512 apart) and issues those loads
// first; the CTA then stages the chunk of its kMT x rows into shared memory (f32, permuted so
// that lane l's four consecutive k's of "quad" q sit at xs[m][q][l]: conflict-free 16-byte
// reads), syncs, and every lane dequantizes its units in registers and multiplies them with the
// kMT rows. A warp owns kGemvRows consecutive output rows (the x reads are shared by them); the
// lanes' partial sums meet in a shuffle reduction. grid = (M groups of kMT, row blocks, splits).
// With splits > 1 each CTA writes its partial sums to scratch and linear_splitk_reduce_kernel
// adds them in split order: no atomics, so the result is deterministic.
//
// Dequantization equals QuantWeight::load (the reference's weight_row_f32) bit for bit:
//  - FP8: cvt.rn.f16x2.e4m3x2 gives the exact E4M3 value as f16 (every E4M3 value is an f16),
//    widened exactly to f32, times the f32 block scale: fp8(q) * scale_inv, one rounding.
//  - NVFP4: the E2M1 nibble s|e1 e0|m placed at f16 bits 15 and 11..9 is the f16 of
//    e2m1 * 2^-14 (the 2-bit exponent lands in the low exponent bits, subnormal e = 0 included),
//    so e2m1 * s == f16val * (s * 2^14) with s = fp8(s8) * weight_scale_2: the product is the same
//    real number, rounded once (s * 2^14 is exact below 2^113). Eight nibbles of a word decode as
//    four f16 pairs (nibble j and j + 4 share a pair) with two shifts and masks per pair.
// NOTE: the H200 streams ~36 GB/s per SM (4.8 TB/s / 132); at ~4 instructions per NVFP4 code
// plus kMT FMAs the kernel is instruction-bound for kMT >= 4, memory-bound at M = 1..2.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/linear/linear.h"
#include "backends/cuda/kernels/quant_weight.cuh"

namespace moe::cuda {

constexpr int kGemvThreads = 256, kGemvWarps = kGemvThreads / 32, kGemvRows = 2;
constexpr int kGemvChunk = 1024;  // k per chunk: 32 lanes x 32 NVFP4 codes (x 2 units of 16 FP8)
constexpr int kGemvQuads = 8;     // 4-k groups per lane per chunk
constexpr int kGemvRowsPerCta = kGemvWarps * kGemvRows;
static_assert(kGemvQuads * 4 * 32 == kGemvChunk, "a chunk is 32 lanes x 8 quads x 4 k");

// Offset within the chunk of element r (0..3) of quad q of lane l.
template <int kFmt>
__device__ __forceinline__ int gemv_chunk_offset(int q, int l, int r) {
  if constexpr (kFmt == kWNvfp4) {
    return l * 32 + q * 4 + r;  // the lane's 16 bytes = 32 consecutive codes
  } else {
    return (q / 4) * 512 + l * 16 + (q % 4) * 4 + r;  // two 16-code units, 512 apart
  }
}

// One lane's weights of one row for one chunk: raw codes plus the two scales they need.
template <int kFmt>
struct GemvUnit {
  static constexpr int kWords = kFmt == kWNvfp4 ? 4 : 8;  // 32-bit words of codes
  uint32_t w[kWords];
  float s[2];  // NVFP4: (fp8(s8) * global) * 2^14 per 16-code group; FP8: block scale per unit

  // 16 bytes at byte offset `off` of row `row` (codes beyond `valid` bytes read as 0): one
  // vector load when kVec (row starts and `off` 16-byte aligned), else bytewise.
  template <bool kVec>
  __device__ __forceinline__ static uint4 load16(const uint8_t* row, int64_t off, int64_t valid) {
    if (off >= valid) return make_uint4(0, 0, 0, 0);
    if constexpr (kVec) {
      return __ldg(reinterpret_cast<const uint4*>(row + off));
    } else {
      uint32_t v[4] = {0, 0, 0, 0};
#pragma unroll
      for (int b = 0; b < 16; ++b)
        if (off + b < valid)
          v[b / 4] |= static_cast<uint32_t>(__ldg(row + off + b)) << (8 * (b % 4));
      return make_uint4(v[0], v[1], v[2], v[3]);
    }
  }

  template <bool kVec>
  __device__ __forceinline__ void load(const LinearParams& p, int64_t n, int64_t k0, int lane) {
    if (n >= p.N) {
#pragma unroll
      for (int i = 0; i < kWords; ++i) w[i] = 0;
      s[0] = s[1] = 0.f;
      return;
    }
    if constexpr (kFmt == kWNvfp4) {
      const int64_t ku = k0 + lane * 32, row_bytes = p.K / 2;
      const uint8_t* row = static_cast<const uint8_t*>(p.w) + n * row_bytes;
      const uint4 v = load16<kVec>(row, ku / 2, row_bytes);
      w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
      const uint8_t* sc = static_cast<const uint8_t*>(p.w_scale) + n * (p.K / 16);
#pragma unroll
      for (int g = 0; g < 2; ++g) {
        const int64_t kg = ku + 16 * g;
        // Same f32 product as QuantWeight::load, then the exact 2^14 of the f16 decoding.
        const float sv = kg < p.K ? fp8_e4m3_to_f32(__ldg(sc + kg / 16)) * p.w_global_scale : 0.f;
        s[g] = sv * 16384.f;
      }
    } else {
      const uint8_t* row = static_cast<const uint8_t*>(p.w) + n * p.K;
      const int64_t scale_cols = (p.K + p.w_block - 1) / p.w_block;
      const float* sc = static_cast<const float*>(p.w_scale) + (n / p.w_block) * scale_cols;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t ku = k0 + h * 512 + lane * 16;
        const uint4 v = load16<kVec>(row, ku, p.K);
        w[4 * h] = v.x, w[4 * h + 1] = v.y, w[4 * h + 2] = v.z, w[4 * h + 3] = v.w;
        s[h] = ku < p.K ? __ldg(sc + ku / p.w_block) : 0.f;
      }
    }
  }

  // The 4 weights of quad q (k offsets gemv_chunk_offset(q, lane, 0..3)), dequantized.
  // NVFP4 decodes a word (two quads) at a time: call with even q, fills out[0..7].
  __device__ __forceinline__ void decode(int q, float* out) const {
    if constexpr (kFmt == kWNvfp4) {
      const uint32_t v = w[q / 2];
      const float sc = s[q / 4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t t = v >> (4 * j);  // nibble j at bits 0..3, nibble j + 4 at bits 16..19
        const uint32_t h2 = ((t << 9) & 0x0E000E00u) | ((t << 12) & 0x80008000u);
        __half2_raw raw;
        raw.x = static_cast<unsigned short>(h2 & 0xFFFFu);
        raw.y = static_cast<unsigned short>(h2 >> 16);
        const float2 f = __half22float2(__half2(raw));
        out[j] = f.x * sc;
        out[j + 4] = f.y * sc;
      }
    } else {
      const uint32_t v = w[q];
      const float sc = s[q / 4];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(
            static_cast<__nv_fp8x2_storage_t>((v >> (16 * j)) & 0xFFFFu), __NV_E4M3);
        const float2 f = __half22float2(__half2(raw));
        out[2 * j] = f.x * sc;
        out[2 * j + 1] = f.y * sc;
      }
    }
  }
};

template <int kFmt, int kMT, bool kVec>
__global__ void __launch_bounds__(kGemvThreads) linear_gemv_kernel(const LinearGemvParams g) {
  const LinearParams& p = g.lin;
  __shared__ float4 xs[kMT][kGemvQuads][32];  // [m][quad][lane]: chunk of x, permuted
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kMT;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.y) * kGemvWarps + warp) * kGemvRows;
  const int64_t chunks = (p.K + kGemvChunk - 1) / kGemvChunk;
  const int64_t c_begin = static_cast<int64_t>(blockIdx.z) * g.chunks_per_split;
  const int64_t c_end = min(c_begin + g.chunks_per_split, chunks);
  float acc[kGemvRows][kMT];
#pragma unroll
  for (int r = 0; r < kGemvRows; ++r)
#pragma unroll
    for (int m = 0; m < kMT; ++m) acc[r][m] = 0.f;

  for (int64_t c = c_begin; c < c_end; ++c) {
    const int64_t k0 = c * kGemvChunk;
    GemvUnit<kFmt> u[kGemvRows];  // weight loads in flight while x is staged
#pragma unroll
    for (int r = 0; r < kGemvRows; ++r) u[r].template load<kVec>(p, n0 + r, k0, lane);
    __syncthreads();  // the previous chunk's readers of xs are done
    float* xf = reinterpret_cast<float*>(&xs[0][0][0]);
    for (int i = threadIdx.x; i < kMT * kGemvChunk; i += kGemvThreads) {
      // i walks xs linearly (conflict-free stores); the global reads gather 16-byte pieces.
      const int m = i / kGemvChunk, q = (i / 128) % kGemvQuads, l = (i / 4) % 32, r = i % 4;
      const int64_t k = k0 + gemv_chunk_offset<kFmt>(q, l, r), row = m0 + m;
      xf[i] = (row < p.M && k < p.K) ? __ldg(p.x + row * p.x_stride + k) : 0.f;
    }
    __syncthreads();
    constexpr int kQuadsPerDecode = kFmt == kWNvfp4 ? 2 : 1;
#pragma unroll
    for (int q = 0; q < kGemvQuads; q += kQuadsPerDecode) {
      float wv[kGemvRows][4 * kQuadsPerDecode];
#pragma unroll
      for (int r = 0; r < kGemvRows; ++r) u[r].decode(q, wv[r]);
#pragma unroll
      for (int m = 0; m < kMT; ++m) {
#pragma unroll
        for (int qq = 0; qq < kQuadsPerDecode; ++qq) {
          const float4 xv = xs[m][q + qq][lane];
#pragma unroll
          for (int r = 0; r < kGemvRows; ++r) {
            float a = acc[r][m];
            a = fmaf(wv[r][4 * qq + 0], xv.x, a);
            a = fmaf(wv[r][4 * qq + 1], xv.y, a);
            a = fmaf(wv[r][4 * qq + 2], xv.z, a);
            a = fmaf(wv[r][4 * qq + 3], xv.w, a);
            acc[r][m] = a;
          }
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kGemvRows; ++r) {
#pragma unroll
    for (int m = 0; m < kMT; ++m) {
      const float v = warp_sum(acc[r][m]);
      const int64_t n = n0 + r, row = m0 + m;
      if (lane == 0 && n < p.N && row < p.M) {
        if (g.splits == 1)
          p.y[row * p.y_stride + n] = v;
        else
          g.partial[(static_cast<int64_t>(blockIdx.z) * p.M + row) * p.N + n] = v;
      }
    }
  }
}

// y[m, n] = sum over splits s (in order) of partial[s, m, n].
__global__ void __launch_bounds__(256) linear_splitk_reduce_kernel(const LinearGemvParams g) {
  const LinearParams& p = g.lin;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.M * p.N) return;
  const int64_t m = i / p.N, n = i % p.N;
  float v = 0.f;
  for (int s = 0; s < g.splits; ++s) v += g.partial[s * p.M * p.N + i];
  p.y[m * p.y_stride + n] = v;
}

// dst = bf16/f16(x), round to nearest even; a thread per element.
template <typename T>
__global__ void __launch_bounds__(256) round_rows_kernel(const RoundRowsParams p) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.M * p.K) return;
  const int64_t m = i / p.K, k = i % p.K;
  const float v = p.x[m * p.x_stride + k];
  T* dst = static_cast<T*>(p.dst) + m * p.dst_stride + k;
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    *dst = __float2bfloat16_rn(v);
  else
    *dst = __float2half_rn(v);
}

}  // namespace moe::cuda
