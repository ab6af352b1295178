// CudaOps: construction, memory placement (allocate, upload, host copies) and the host-side
// helpers shared by the op entries.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "backends/cuda/cublaslt_gemm.h"
#include "backends/cuda/cuda_check.h"

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernels/linear/linear.h"

namespace moe::cuda {
namespace {
constexpr size_t kStagingBytes = size_t{4} << 20;
constexpr size_t kRingHalfBytes = size_t{4} << 20;
constexpr size_t kBounceBytes = size_t{8} << 20;
// cuBLASLt workspace (linear): 32 MiB, what cuBLAS recommends on Hopper; fixed, so nothing is
// allocated in the forward.
constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;
constexpr uintptr_t kPage = 4096;

Stream make_stream(int device) {
  MOE_CUDA_CHECK(cudaSetDevice(device), "CudaOps");
  cudaStream_t s = nullptr;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "CudaOps");
  return s;
}
}  // namespace

CudaOps::CudaOps(const DeviceInfo& info)
    : info_(info), stream_(make_stream(info.ordinal)), scratch_(info.ordinal, stream_) {
  MOE_CUDA_CHECK(cudaHostAlloc(&staging_, kStagingBytes, cudaHostAllocDefault), "CudaOps");
  staging_size_ = kStagingBytes;
  MOE_CUDA_CHECK(cudaHostAlloc(&ring_, 2 * kRingHalfBytes, cudaHostAllocDefault), "CudaOps");
  ring_half_ = kRingHalfBytes;
  MOE_CUDA_CHECK(cudaHostAlloc(&bounce_, kBounceBytes, cudaHostAllocDefault), "CudaOps");
  bounce_size_ = kBounceBytes;
  for (void*& e : ring_event_) {
    cudaEvent_t ev = nullptr;
    MOE_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "CudaOps");
    e = ev;
  }
  gemm_ = std::make_unique<CublasLtGemm>(info.ordinal, kGemmWorkspaceBytes);
  std::string warning;
  linear_gemv_max_m_ = parse_linear_gemv_max_m(std::getenv("MOE_LINEAR_GEMV_MAX_M"), &warning);
  if (!warning.empty()) std::fprintf(stderr, "moengine: warning: %s\n", warning.c_str());
}

int64_t CudaOps::parse_linear_gemv_max_m(const char* value, std::string* warning) {
  static_assert(kDefaultLinearGemvMaxM >= 0 && kDefaultLinearGemvMaxM <= kLinearGemvMaxM);
  if (value == nullptr) return kDefaultLinearGemvMaxM;
  char* end = nullptr;
  errno = 0;
  const long long m = std::strtoll(value, &end, 10);
  if (end != value && *end == '\0' && errno == 0 && m >= 0 && m <= kLinearGemvMaxM) return m;
  if (warning)
    *warning = "MOE_LINEAR_GEMV_MAX_M='" + std::string(value) + "' is not an integer in 0.." +
               std::to_string(kLinearGemvMaxM) + "; using the default " +
               std::to_string(kDefaultLinearGemvMaxM) + " (docs/env.md)";
  return kDefaultLinearGemvMaxM;
}

CudaOps::~CudaOps() {
  cudaStreamSynchronize(stream_);
  gemm_.reset();
  cudaFreeHost(staging_);
  cudaFreeHost(ring_);
  cudaFreeHost(bounce_);
  for (void* e : ring_event_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  cudaStreamDestroy(stream_);
}

void CudaOps::synchronize() { MOE_CUDA_CHECK(cudaStreamSynchronize(stream_), "synchronize"); }

bool CudaOps::capturing() const {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  MOE_CUDA_CHECK(cudaStreamIsCapturing(stream_, &st), "capture query");
  return st != cudaStreamCaptureStatusNone;
}

Tensor CudaOps::allocate(Shape shape, DType dtype, bool zero) {
  void* p = nullptr;
  const size_t n = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  MOE_CUDA_CHECK(cudaSetDevice(info_.ordinal), "allocate");
  MOE_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1)), "allocate: cudaMalloc");
  if (zero) {
    MOE_CUDA_CHECK(cudaMemsetAsync(p, 0, n, stream_), "allocate: cudaMemset");
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream_), "allocate");
  }
  std::shared_ptr<void> owner(p, [](void* q) { cudaFree(q); });
  return Tensor::wrap_mutable(std::move(owner), p, dtype, shape, Device::kCuda);
}

Tensor CudaOps::upload(const Tensor& host) {
  void* p = nullptr;
  const size_t n = host.nbytes();
  MOE_CUDA_CHECK(cudaSetDevice(info_.ordinal), "upload");
  MOE_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1)), "upload: cudaMalloc");
  h2d_sync(p, host.data<std::byte>(), n);
  std::shared_ptr<const void> owner(p, [](const void* q) { cudaFree(const_cast<void*>(q)); });
  return Tensor::wrap(std::move(owner), p, host.dtype(), host.shape(), Device::kCuda);
}

void CudaOps::copy_from_host(TensorView dst, const void* src) {
  MOE_CHECK(dst.is_contiguous()) << "copy_from_host into a strided view "
                                 << dst.shape().to_string();
  const size_t n = dst.nbytes();
  if (n == 0) return;
  if (capturing()) {
    // A captured copy must read pinned memory that outlives the graph: stage it.
    const size_t off = (staging_used_ + 255) / 256 * 256;
    MOE_CHECK(off + n <= staging_size_)
        << "copy_from_host: capture staging full (" << staging_size_ << " bytes); call "
        << "release_capture_staging() when old graphs are gone";
    std::memcpy(static_cast<std::byte*>(staging_) + off, src, n);
    staging_used_ = off + n;
    if (recording_) recorded_.push_back({dst.raw(), static_cast<std::byte*>(staging_) + off, n});
    MOE_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), static_cast<std::byte*>(staging_) + off, n,
                                   cudaMemcpyHostToDevice, stream_),
                   "copy_from_host");
    return;
  }
  if (n > ring_half_) {  // large copies (tests, start-up): synchronous through the bounce buffer
    h2d_sync(dst.raw(), src, n);
    return;
  }
  MOE_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), stage_h2d(src, n), n, cudaMemcpyDefault, stream_),
                 "copy_from_host");
}

void* CudaOps::stage_h2d(const void* src, size_t n) {
  if (ring_off_ + n > ring_half_) {  // leave this half, enter the other one
    MOE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(ring_event_[ring_cur_]), stream_),
                   "copy_from_host");
    ring_event_recorded_[ring_cur_] = true;
    ring_cur_ ^= 1;
    if (ring_event_recorded_[ring_cur_])  // blocks only if the GPU is a whole half behind
      MOE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(ring_event_[ring_cur_])),
                     "copy_from_host");
    ring_off_ = 0;
  }
  std::byte* p = static_cast<std::byte*>(ring_) + ring_cur_ * ring_half_ + ring_off_;
  std::memcpy(p, src, n);
  ring_off_ += (n + 255) / 256 * 256;
  return p;
}

void CudaOps::h2d_sync(void* dst, const void* src, size_t n) {
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_), "host-to-device copy");
  for (size_t off = 0; off < n; off += bounce_size_) {
    const size_t c = std::min(bounce_size_, n - off);
    std::memcpy(bounce_, static_cast<const std::byte*>(src) + off, c);
    MOE_CUDA_CHECK(
        cudaMemcpyAsync(static_cast<std::byte*>(dst) + off, bounce_, c, cudaMemcpyDefault, stream_),
        "host-to-device copy");
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream_), "host-to-device copy");
  }
}

void CudaOps::copy_to_host(void* dst, ConstTensorView src) {
  MOE_CHECK(src.is_contiguous()) << "copy_to_host from a strided view " << src.shape().to_string();
  const size_t n = src.nbytes();
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_), "copy_to_host");
  if (n == 0) return;
  for (size_t off = 0; off < n; off += bounce_size_) {
    const size_t c = std::min(bounce_size_, n - off);
    MOE_CUDA_CHECK(cudaMemcpyAsync(bounce_, static_cast<const std::byte*>(src.raw()) + off, c,
                                   cudaMemcpyDefault, stream_),
                   "copy_to_host");
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream_), "copy_to_host");
    std::memcpy(static_cast<std::byte*>(dst) + off, bounce_, c);
  }
}

}  // namespace moe::cuda
