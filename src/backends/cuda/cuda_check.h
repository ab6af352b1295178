// MOE_CUDA_CHECK: fatal check of a CUDA runtime call, naming the op, the call, file:line and the
// device. Every kernel launch is followed by MOE_CUDA_CHECK_LAUNCH. Only for backends/cuda.
#pragma once

#include <cuda_runtime.h>

#include "core/check.h"

#define MOE_CUDA_CHECK(call, op)                                                          \
  do {                                                                                    \
    cudaError_t moe_cuda_err_ = (call);                                                   \
    if (moe_cuda_err_ != cudaSuccess) {                                                   \
      int moe_cuda_dev_ = -1;                                                             \
      cudaGetDevice(&moe_cuda_dev_);                                                      \
      MOE_CHECK(false) << "CUDA error in op '" << (op) << "' on device " << moe_cuda_dev_ \
                       << ": " #call " -> " << cudaGetErrorName(moe_cuda_err_) << " ("    \
                       << cudaGetErrorString(moe_cuda_err_) << ")";                       \
    }                                                                                     \
  } while (0)

#define MOE_CUDA_CHECK_LAUNCH(op) MOE_CUDA_CHECK(cudaGetLastError(), op)
