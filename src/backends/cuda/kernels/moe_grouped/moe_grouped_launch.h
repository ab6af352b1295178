// Host helper of the grouped GEMM launchers (moe_grouped.cu, moe_tile_gemm.cu): every grouped GEMM
// runs as a persistent grid sized from the device (fixed grid: CUDA-graph capturable; the work
// count is read on the device).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"

namespace moe::cuda {

// kernel<<<grid, block, smem, stream>>>(args), with programmatic stream serialization when pdl
// (GroupedLaunch::pdl): the kernel may start while its predecessor in the stream runs, once that
// one executed griddepcontrol.launch_dependents (or completed); every grouped kernel begins with
// griddepcontrol.wait (grouped::pdl_wait), so nothing is read or written before the predecessor
// completed and its memory is visible.
// carveout >= 0: the launch's preferred shared-memory carveout (percent of the SM's maximum;
// cudaLaunchAttributePreferredSharedMemoryCarveout, kept by a captured graph's node).
template <typename... Params, typename... Args>
void launch_k_carveout(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, Stream stream,
                       bool pdl, int carveout, Args&&... args) {
  if (!pdl && carveout < 0) {
    kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
    return;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute a[2];
  int n = 0;
  if (pdl) {
    a[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (carveout >= 0) {
    a[n].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    a[n++].val.sharedMemCarveout = static_cast<unsigned>(carveout);
  }
  cfg.attrs = a;
  cfg.numAttrs = n;
  // Errors surface through the caller's MOE_CUDA_CHECK_LAUNCH (cudaGetLastError).
  (void)cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}
template <typename... Params, typename... Args>
void launch_k(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, Stream stream,
              bool pdl, Args&&... args) {
  launch_k_carveout(kernel, grid, block, smem, stream, pdl, -1, std::forward<Args>(args)...);
}

// Launches kernel(p) on sm_count x min(occupancy, wanted_per_sm) CTAs of `threads` threads with
// `smem` bytes of dynamic shared memory (opted in when > 0). `name` prefixes the errors.
template <typename Kernel>
void launch_persistent(Kernel kernel, const MoeGemmParams& p, int threads, int smem, int sm_count,
                       int wanted_per_sm, const char* name, Stream stream, bool pdl = false) {
  if (smem > 0)
    MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
                   name);
  int occ = 0;
  MOE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, smem), name);
  MOE_CHECK(occ >= 1) << name << ": a CTA of " << threads << " threads and " << smem
                      << " B of shared memory does not fit on an SM";
  launch_k(kernel, dim3(sm_count * std::min(occ, std::max(wanted_per_sm, 1))), dim3(threads), smem,
           stream, pdl, p);
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
