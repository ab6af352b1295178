// DeviceInfo: the limits of one CUDA device, read once at start-up and passed explicitly to
// everything that sizes kernels (tile configs are checked against smem_optin_per_block).
// Plain C++ header: no CUDA types leak out of backends/cuda.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace moe::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t smem_per_block_optin = 0;  // bytes a block may use after cudaFuncSetAttribute
  int64_t smem_per_sm = 0;
  int64_t l2_bytes = 0;
  int64_t global_mem_bytes = 0;
  int64_t free_mem_bytes = 0;
  int runtime_version = 0, driver_version = 0;
};

// Number of visible CUDA devices; an error (not a crash) when there is no driver or device.
Result<int> cuda_device_count();
// Reads the properties of device `ordinal`.
Result<DeviceInfo> query_device(int ordinal);
// One line: "NVIDIA H200 (sm_90, 132 SMs, 227 KiB smem/block, 60 MiB L2, 140.4 GiB)".
std::string describe(const DeviceInfo& d);

}  // namespace moe::cuda
