// linear benchmark: CudaOps::linear (cuBLASLt for BF16, the small-M kernel for FP8 / NVFP4 at
// M <= 16, else the tile kernel) next to the 64x64 SIMT tile kernel (launch_linear, the path
// before cuBLASLt) on the GLM-5 dense shapes at M = 1, 16, 64.
// Bytes model: weight bytes (codes + scales) + x (M*K f32) + y (M*N f32). FLOP model: 2*M*N*K.
// Weights are rotated over enough copies to exceed 3x L2, so every call streams from HBM.
// Peak for %: a device-to-device cudaMemcpy measured in the same run (read + write bytes).
// Time: CUDA events around `iters` back-to-back calls (eager launches), mean per call.
// Usage: linear_bench [--iters N] [--m 1,16,64]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common/bench_util.cuh"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernels/linear/linear.h"

namespace {

using moe::bench::fill;

using namespace moe;
using namespace moe::cuda;

__global__ void __launch_bounds__(256) fill_f32(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    p[i] = v * (1.f + 0.25f * static_cast<float>(i % 7));
}

struct Shape2 {
  const char* name;
  ops::WeightFormat fmt;
  DType dense;  // dense dtype (kDense only)
  int64_t N, K;
};

struct Weights {
  std::vector<Tensor> data, scale;
  std::vector<ops::Weight> w;
  size_t bytes = 0;  // one copy, codes + scales
};

Weights make_weights(CudaOps& ops, const Shape2& s, size_t l2) {
  Weights r;
  size_t data_bytes = 0, scale_bytes = 0;
  Shape ds{s.N, s.K}, ss{1};
  DType ddt = s.dense, sdt = DType::kF32;
  if (s.fmt == ops::WeightFormat::kDense) {
    data_bytes = static_cast<size_t>(s.N * s.K) * dtype_size(s.dense);
  } else if (s.fmt == ops::WeightFormat::kFp8Block) {
    ddt = DType::kF8E4M3;
    data_bytes = static_cast<size_t>(s.N * s.K);
    ss = Shape{(s.N + 127) / 128, (s.K + 127) / 128};
    scale_bytes = static_cast<size_t>(ss.numel()) * 4;
  } else {
    ddt = DType::kU8;
    ds = Shape{s.N, s.K / 2};
    data_bytes = static_cast<size_t>(s.N * s.K / 2);
    ss = Shape{s.N, s.K / 16};
    sdt = DType::kF8E4M3;
    scale_bytes = static_cast<size_t>(s.N * s.K / 16);
  }
  r.bytes = data_bytes + scale_bytes;
  const size_t copies = std::clamp<size_t>((3 * l2 + r.bytes - 1) / r.bytes, 1, 64);
  for (size_t c = 0; c < copies; ++c) {
    ops::Weight w;
    w.format = s.fmt;
    r.data.push_back(ops.allocate(ds, ddt, false));
    fill(r.data.back().data<std::byte>(), data_bytes, static_cast<uint32_t>(c + 1),
         s.fmt == ops::WeightFormat::kDense      ? 3
         : s.fmt == ops::WeightFormat::kFp8Block ? 1
                                                 : 0,
         ops.stream());
    w.data = r.data.back().cview();
    if (s.fmt != ops::WeightFormat::kDense) {
      r.scale.push_back(ops.allocate(ss, sdt, false));
      if (s.fmt == ops::WeightFormat::kFp8Block) {
        fill_f32<<<256, 256, 0, ops.stream()>>>(r.scale.back().data<float>(),
                                                static_cast<size_t>(ss.numel()), 1e-2f);
        CK(cudaGetLastError());
      } else {
        fill(r.scale.back().data<std::byte>(), scale_bytes, static_cast<uint32_t>(c + 101), 2,
             ops.stream());
      }
      w.scale = r.scale.back().cview();
      w.block = 128;
      w.global_scale = 0.01f;
    }
    r.w.push_back(w);
  }
  return r;
}

// The tile kernel on the same problem (the peer).
LinearParams tile_params(const ops::Weight& w, TensorView y, ConstTensorView x) {
  LinearParams p;
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.x = x.data<float>();
  p.x_stride = x.stride(0);
  p.w = w.data.raw();
  p.wt = w.format == ops::WeightFormat::kNvfp4      ? kWNvfp4
         : w.format == ops::WeightFormat::kFp8Block ? kWFp8Block
         : w.data.dtype() == DType::kBF16           ? kWBF16
                                                    : kWF32;
  p.w_scale = w.scale.empty() ? nullptr : w.scale.raw();
  p.w_block = w.block;
  p.w_global_scale = w.global_scale;
  p.M = y.dim(0);
  p.N = y.dim(1);
  p.K = x.dim(1);
  return p;
}

template <typename F>
double time_ms(CudaOps& ops, int iters, F&& f) {
  for (int i = 0; i < 3; ++i) f(i);
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, ops.stream()));
  for (int i = 0; i < iters; ++i) f(i);
  CK(cudaEventRecord(b, ops.stream()));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / iters;
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 50;
  std::vector<int64_t> ms = {1, 16, 64};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--m")) {
      ms.clear();
      for (const char* p = argv[i + 1]; *p;) {
        ms.push_back(std::strtoll(p, const_cast<char**>(&p), 10));
        if (*p == ',') ++p;
      }
    }
  }
  auto info = query_device(0);
  if (!info.ok()) {
    std::fprintf(stderr, "linear_bench: %s\n", info.status().to_string().c_str());
    return 2;
  }
  CudaOps ops(*info);
  std::printf("device: %s\n", describe(*info).c_str());

  // Peak: device-to-device copy of 1 GiB (bytes read + written).
  const size_t cb = size_t{1} << 30;
  Tensor c0 = ops.allocate({static_cast<int64_t>(cb)}, DType::kU8, false);
  Tensor c1 = ops.allocate({static_cast<int64_t>(cb)}, DType::kU8, false);
  const double copy_ms = time_ms(ops, 10, [&](int) {
    CK(cudaMemcpyAsync(c1.data<std::byte>(), c0.data<std::byte>(), cb, cudaMemcpyDeviceToDevice,
                       ops.stream()));
  });
  const double peak = 2.0 * static_cast<double>(cb) / (copy_ms * 1e-3) / 1e9;
  std::printf("peak (D2D copy, read + write): %.0f GB/s\n\n", peak);
  c0 = Tensor();
  c1 = Tensor();

  const std::vector<Shape2> shapes = {
      {"q_a bf16", ops::WeightFormat::kDense, DType::kBF16, 2048, 6144},
      {"q_b bf16", ops::WeightFormat::kDense, DType::kBF16, 64 * 256, 2048},
      {"kv_a bf16", ops::WeightFormat::kDense, DType::kBF16, 576, 6144},
      {"o_proj bf16", ops::WeightFormat::kDense, DType::kBF16, 6144, 16384},
      {"lm_head bf16", ops::WeightFormat::kDense, DType::kBF16, 154880, 6144},
      {"gate_up nvfp4", ops::WeightFormat::kNvfp4, DType::kU8, 2 * 12288, 6144},
      {"down nvfp4", ops::WeightFormat::kNvfp4, DType::kU8, 6144, 12288},
      {"gate_up fp8", ops::WeightFormat::kFp8Block, DType::kU8, 2 * 12288, 6144},
      {"down fp8", ops::WeightFormat::kFp8Block, DType::kU8, 6144, 12288},
  };
  std::printf("%-14s %4s %10s %9s %8s %6s | %10s %9s %6s | %7s\n", "shape", "M", "linear_us",
              "GB/s", "TFLOP/s", "%peak", "tile_us", "GB/s", "%peak", "speedup");
  for (const Shape2& s : shapes) {
    Weights w = make_weights(ops, s, static_cast<size_t>(info->l2_bytes));
    for (int64_t M : ms) {
      Tensor x = ops.allocate({M, s.K}, DType::kF32, false);
      fill_f32<<<256, 256, 0, ops.stream()>>>(x.data<float>(), static_cast<size_t>(M * s.K), 0.5f);
      CK(cudaGetLastError());
      Tensor y = ops.allocate({M, s.N}, DType::kF32, false);
      const size_t nw = w.w.size();
      const double t = time_ms(ops, iters, [&](int i) {
        ops.linear(y.view(), x.cview(), w.w[static_cast<size_t>(i) % nw]);
      });
      const double t_tile = time_ms(ops, std::max(iters / 5, 3), [&](int i) {
        launch_linear(tile_params(w.w[static_cast<size_t>(i) % nw], y.view(), x.cview()),
                      ops.stream());
      });
      const double bytes = static_cast<double>(w.bytes) + 4.0 * static_cast<double>(M * s.K) +
                           4.0 * static_cast<double>(M * s.N);
      const double flop = 2.0 * static_cast<double>(M) * static_cast<double>(s.N * s.K);
      const double gbs = bytes / (t * 1e-3) / 1e9, gbs_tile = bytes / (t_tile * 1e-3) / 1e9;
      std::printf("%-14s %4lld %10.1f %9.0f %8.2f %5.1f%% | %10.1f %9.0f %5.1f%% | %6.2fx\n",
                  s.name, static_cast<long long>(M), t * 1e3, gbs, flop / (t * 1e-3) / 1e12,
                  100.0 * gbs / peak, t_tile * 1e3, gbs_tile, 100.0 * gbs_tile / peak, t_tile / t);
    }
  }
  ops.synchronize();
  return 0;
}
