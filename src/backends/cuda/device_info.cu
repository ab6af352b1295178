#include <cuda_runtime.h>

#include <cstdio>

#include "backends/cuda/device_info.h"

namespace moe::cuda {
namespace {
Status cuda_error(cudaError_t e, const char* call) {
  return unimplemented(std::string(call) + " failed: " + cudaGetErrorString(e) +
                       " (no usable CUDA driver or device)");
}
}  // namespace

Result<int> cuda_device_count() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return cuda_error(e, "cudaGetDeviceCount");
  }
  return n;
}

Result<DeviceInfo> query_device(int ordinal) {
  MOE_ASSIGN_OR_RETURN(int n, cuda_device_count());
  if (ordinal < 0 || ordinal >= n)
    return invalid_argument("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                            std::to_string(n) + " visible)");
  cudaDeviceProp p{};
  cudaError_t e = cudaGetDeviceProperties(&p, ordinal);
  if (e != cudaSuccess) return cuda_error(e, "cudaGetDeviceProperties");
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.smem_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  d.smem_per_sm = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
  d.l2_bytes = p.l2CacheSize;
  d.global_mem_bytes = static_cast<int64_t>(p.totalGlobalMem);
  size_t free_b = 0, total_b = 0;
  if (cudaSetDevice(ordinal) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
    d.free_mem_bytes = static_cast<int64_t>(free_b);
  cudaRuntimeGetVersion(&d.runtime_version);
  cudaDriverGetVersion(&d.driver_version);
  return d;
}

std::string describe(const DeviceInfo& d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %lld KiB smem/block, %lld MiB L2, %.1f GiB)",
                d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count,
                static_cast<long long>(d.smem_per_block_optin / 1024),
                static_cast<long long>(d.l2_bytes >> 20), d.global_mem_bytes / double(1 << 30));
  return buf;
}

}  // namespace moe::cuda
