#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/mla_attention/mla_attention.cuh"

namespace moe::cuda {

int64_t mla_attention_smem_bytes(const MlaAttentionParams& p) {
  return (p.Dn + p.R) * static_cast<int64_t>(sizeof(float));
}

void launch_mla_attention(const MlaAttentionParams& p, Stream stream) {
  const int64_t blocks = p.b.num_tokens * p.H;
  if (blocks == 0) return;
  const int64_t smem = mla_attention_smem_bytes(p);
  if (smem > 48 * 1024)
    MOE_CUDA_CHECK(
        cudaFuncSetAttribute(mla_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem)),
        "mla_attention");
  mla_attention_kernel<<<static_cast<unsigned>(blocks), kMlaThreads, static_cast<size_t>(smem),
                         stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("mla_attention");
}

}  // namespace moe::cuda
