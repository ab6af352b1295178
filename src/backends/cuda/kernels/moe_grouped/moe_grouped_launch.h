// Host helper of the grouped GEMM launchers (moe_grouped.cu, moe_tile_gemm.cu): every grouped GEMM
// runs as a persistent grid sized from the device (fixed grid: CUDA-graph capturable; the work
// count is read on the device).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"

namespace moe::cuda {

// Launches kernel(p) on sm_count x min(occupancy, wanted_per_sm) CTAs of `threads` threads with
// `smem` bytes of dynamic shared memory (opted in when > 0). `name` prefixes the errors.
template <typename Kernel>
void launch_persistent(Kernel kernel, const MoeGemmParams& p, int threads, int smem, int sm_count,
                       int wanted_per_sm, const char* name, Stream stream) {
  if (smem > 0)
    MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
                   name);
  int occ = 0;
  MOE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, smem), name);
  MOE_CHECK(occ >= 1) << name << ": a CTA of " << threads << " threads and " << smem
                      << " B of shared memory does not fit on an SM";
  kernel<<<sm_count * std::min(occ, std::max(wanted_per_sm, 1)), threads, smem, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH(name);
}

// Attributes of a compiled kernel (registers, static shared memory: grouped_gemm_regs,
// grouped_gemm_static_smem).
template <typename Kernel>
cudaFuncAttributes kernel_attributes(Kernel kernel, const char* name = "moe_grouped/attributes") {
  cudaFuncAttributes a{};
  MOE_CUDA_CHECK(cudaFuncGetAttributes(&a, kernel), name);
  return a;
}
template <typename Kernel>
int kernel_regs(Kernel kernel) {
  return kernel_attributes(kernel).numRegs;
}

}  // namespace moe::cuda
