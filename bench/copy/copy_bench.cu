// bench/copy: global -> shared-memory copy throughput per SM on sm_90, by copy mechanism and size:
// 16-byte cp.async from every thread of a CTA against 1D bulk copies (cp.async.bulk, completion
// on an mbarrier) of 1..32 KB, issued by one lane or spread over a warp's lanes. These are the
// copy paths of the grouped MoE GEMMs (moe_grouped: cp.async rings, the NVFP4 bulk-copy ring with
// 1 KB + 128 B copies); the numbers say which copy sizes can feed a tensor-core GEMM.
// One CTA of 256 threads per SM, a ring of kStages stages of kStage bytes, kStages - 1 stages in
// flight (160 KB per SM), nothing computed on the data. DRAM rows: each CTA streams its own slice
// of a 4 GB buffer (every byte read once); L2 rows: every CTA re-reads the same 8 MB.
// Prints the median of 7 CUDA-event-timed launches per row.
// Usage: copy_bench   (no arguments; needs compute capability 9.0 or later)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/bench_util.cuh"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_common.cuh"

namespace {

// The grouped GEMMs' own copy primitives (moe_grouped_common.cuh), so the numbers are theirs.
using moe::cuda::grouped::bulk_copy;
using moe::cuda::grouped::cp_async16;
using moe::cuda::grouped::cp_async_commit;
using moe::cuda::grouped::cp_async_wait;
using moe::cuda::grouped::mbar_arrive_expect_tx;
using moe::cuda::grouped::mbar_init;
using moe::cuda::grouped::mbar_init_fence;
using moe::cuda::grouped::mbar_wait;

constexpr int kStage = 32768;
constexpr int kStages = 6;
constexpr int kThreads = 256;

// bulk: copies of `size` bytes, stage by stage, issued by lanes 0..lanes-1 of warp 0; else
// cp.async of 16 bytes by every thread.
__global__ void __launch_bounds__(kThreads, 1)
    copy_kernel(const uint8_t* buf, int64_t slice, int64_t wrap, int64_t steps, int size, int lanes,
                bool bulk) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bars = base + kStages * kStage;
  const int tid = threadIdx.x;
  if (tid == 0)
    for (int s = 0; s < kStages; ++s) mbar_init(bars + 8 * s, 1);
  mbar_init_fence();
  __syncthreads();
  const uint8_t* src0 = buf + blockIdx.x * slice;
  auto issue = [&](int64_t step) {
    const int s = static_cast<int>(step % kStages);
    const uint8_t* src = src0 + (step * kStage) % wrap;
    const uint32_t dst = base + s * kStage;
    if (bulk) {
      if (tid < lanes) {
        if (tid == 0) mbar_arrive_expect_tx(bars + 8 * s, kStage);
        for (int i = tid; i < kStage / size; i += lanes)
          bulk_copy(dst + i * size, src + i * size, size, bars + 8 * s);
      }
    } else {
      for (int i = tid; i < kStage / 16; i += kThreads) cp_async16(dst + i * 16, src + i * 16);
      cp_async_commit();
    }
  };
  for (int64_t st = 0; st < kStages - 1 && st < steps; ++st) issue(st);
  for (int64_t st = 0; st < steps; ++st) {
    if (bulk)
      mbar_wait(bars + 8 * (st % kStages), (st / kStages) & 1);
    else
      cp_async_wait<kStages - 2>();
    __syncthreads();  // stage st landed for everyone; stage st - 1 is free
    if (st + kStages - 1 < steps)
      issue(st + kStages - 1);
    else if (!bulk)
      cp_async_commit();  // keep the group count uniform
  }
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  if (!moe::bench::sm90_device("copy_bench", &prop)) return 1;
  const int sms = prop.multiProcessorCount;
  const int64_t total = int64_t{4} << 30, slice = total / sms / kStage * kStage;
  const int64_t l2_bytes = int64_t{8} << 20;
  uint8_t* buf = nullptr;
  CK(cudaMalloc(&buf, total));
  CK(cudaMemset(buf, 1, total));
  const int smem = kStages * kStage + 8 * kStages;
  CK(cudaFuncSetAttribute(copy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  struct Row {
    bool bulk;
    int size, lanes;
  };
  const Row rows[] = {{false, 16, 0},  {true, 1024, 1}, {true, 1024, 32}, {true, 2048, 16},
                      {true, 4096, 8}, {true, 8192, 4}, {true, 16384, 2}, {true, 32768, 1}};
  std::printf("device: %s, %d SMs; stages of %d bytes, %d in flight per SM\n", prop.name, sms,
              kStage, kStages - 1);
  std::printf("| source | copy | bytes per copy | issuing lanes | time | TB/s | GB/s per SM |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (bool l2 : {false, true})
    for (const Row& r : rows) {
      // L2 rows: every CTA reads the same 8 MB (slice 0 for all), 4096 stages each.
      const int64_t steps = l2 ? 4096 : slice / kStage;
      const double t = moe::bench::median_ms_per_launch(7, 1, [&](int) {
        copy_kernel<<<sms, kThreads, smem>>>(buf, l2 ? 0 : slice, l2 ? l2_bytes : slice, steps,
                                             r.size, r.lanes, r.bulk);
      });
      const double bytes = static_cast<double>(sms) * steps * kStage;
      std::printf("| %s | %s | %d | %s | %.3f ms | %.2f | %.1f |\n", l2 ? "L2 (8 MB)" : "DRAM",
                  r.bulk ? "cp.async.bulk" : "cp.async 16 B", r.size,
                  r.bulk ? std::to_string(r.lanes).c_str() : "all 256", t, bytes / t / 1e9,
                  bytes / t / 1e6 / sms);
    }
  CK(cudaFree(buf));
  return 0;
}
