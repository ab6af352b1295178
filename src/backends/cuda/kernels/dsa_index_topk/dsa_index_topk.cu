#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/dsa_index_topk/dsa_index_topk.cuh"

namespace moe::cuda {

void launch_dsa_index_topk(const DsaIndexTopkParams& p, Stream stream) {
  const int64_t T = p.b.num_tokens;
  if (T == 0) return;
  MOE_CHECK(T <= 65535) << "dsa_index_topk: " << T << " tokens exceed the grid";
  const dim3 grid(static_cast<unsigned>(ceil_div(p.n_pad, kDsaScoreThreads / 32)),
                  static_cast<unsigned>(T));
  dsa_score_kernel<<<grid, kDsaScoreThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("dsa_index_topk/score");
  dsa_select_kernel<<<static_cast<unsigned>(T), kDsaSelectThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("dsa_index_topk/select");
}

}  // namespace moe::cuda
