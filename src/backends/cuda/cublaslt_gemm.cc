// CublasLtGemm: cached cuBLASLt plans for y = x · w^T (see the header for the contract).
//
// Layout mapping: cuBLASLt is column-major. Row-major y [M, N] is column-major y^T [N, M] with
// ld y_stride; row-major w [N, K] is column-major [K, N] with ld K, used transposed (op T);
// row-major x [M, K] is column-major [K, M] with ld x_stride (op N). So y^T = op_T(w) · x, the
// "TN" problem with m = N, n = M, k = K, which every cuBLASLt kernel family supports.
#include "backends/cuda/cublaslt_gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "backends/cuda/cuda_check.h"

#define MOE_CUBLAS_CHECK(call, op)                                \
  do {                                                            \
    cublasStatus_t moe_cublas_st_ = (call);                       \
    MOE_CHECK(moe_cublas_st_ == CUBLAS_STATUS_SUCCESS)            \
        << "cuBLASLt error in op '" << (op) << "': " #call " -> " \
        << cublasLtGetStatusName(moe_cublas_st_) << " ("          \
        << cublasLtGetStatusString(moe_cublas_st_) << ")";        \
  } while (0)

namespace moe::cuda {
namespace {

// Cached plans are dropped all at once past this many (prefill sees many distinct M); a plan is
// host-only state, so dropping one never affects a captured graph.
constexpr size_t kMaxPlans = 1024;

// Largest power of two (<= 256) dividing the address: cuBLASLt's alignment preference unit.
int64_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t al = 256;
  while (al > 1 && (a % static_cast<uintptr_t>(al)) != 0) al /= 2;
  return al;
}

cublasLtHandle_t lt(void* h) { return static_cast<cublasLtHandle_t>(h); }

}  // namespace

struct CublasLtGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

CublasLtGemm::CublasLtGemm(int device, size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  MOE_CUDA_CHECK(cudaSetDevice(device), "CublasLtGemm");
  cublasLtHandle_t h = nullptr;
  MOE_CUBLAS_CHECK(cublasLtCreate(&h), "CublasLtGemm");
  handle_ = h;
  MOE_CUDA_CHECK(cudaMalloc(&workspace_, std::max<size_t>(workspace_bytes_, 1)),
                 "CublasLtGemm workspace");
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  cudaFree(workspace_);
  if (handle_) cublasLtDestroy(lt(handle_));
}

CublasLtGemm::Key CublasLtGemm::key_of(const LtGemmArgs& a) {
  return {a.M,
          a.N,
          a.K,
          a.wt,
          a.x_stride,
          a.y_stride,
          alignment_of(a.x),
          alignment_of(a.w),
          alignment_of(a.y)};
}

CublasLtGemm::Plan& CublasLtGemm::plan(const LtGemmArgs& a) {
  const Key key = key_of(a);
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  if (plans_.size() >= kMaxPlans) plans_.clear();
  MOE_CHECK(a.wt == kWBF16 || a.wt == kWF16)
      << "CublasLtGemm: weight type code " << a.wt << " (supported: BF16, F16)";
  MOE_CHECK(a.M > 0 && a.N > 0 && a.K > 0 && a.x_stride >= a.K && a.y_stride >= a.N)
      << "CublasLtGemm: M " << a.M << " N " << a.N << " K " << a.K << " x_stride " << a.x_stride
      << " y_stride " << a.y_stride;
  auto p = std::make_unique<Plan>();
  const char* op = "linear (cuBLASLt plan)";
  MOE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), op);
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  MOE_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), op);
  MOE_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), op);
  const cudaDataType_t in = a.wt == kWBF16 ? CUDA_R_16BF : CUDA_R_16F;
  MOE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, in, static_cast<uint64_t>(a.K),
                                              static_cast<uint64_t>(a.N), a.K),
                   op);  // w: col-major [K, N]
  MOE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, in, static_cast<uint64_t>(a.K),
                                              static_cast<uint64_t>(a.M), a.x_stride),
                   op);  // x: col-major [K, M]
  MOE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->d, CUDA_R_32F, static_cast<uint64_t>(a.N),
                                              static_cast<uint64_t>(a.M), a.y_stride),
                   op);  // y: col-major [N, M] (also C, with beta = 0)

  cublasLtMatmulPreference_t pref = nullptr;
  MOE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref), op);
  const uint64_t ws = workspace_bytes_;
  const uint32_t al_x = static_cast<uint32_t>(key[6]), al_w = static_cast<uint32_t>(key[7]),
                 al_y = static_cast<uint32_t>(key[8]);
  MOE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
                       pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                   op);
  for (const auto& [attr, al] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al_w},
                                 std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al_x},
                                 std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_y},
                                 std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_y}})
    MOE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &al, sizeof(al)), op);
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt(handle_), p->desc, p->a, p->b, p->d,
                                                           p->d, pref, 1, &result, &count);
  cublasLtMatmulPreferenceDestroy(pref);
  // Any failure (NOT_SUPPORTED: no algorithm for this problem or alignment) leaves the plan
  // unusable and the caller takes its exact fallback; the plan is cached, so it is asked once.
  if (st == CUBLAS_STATUS_SUCCESS && count > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    p->algo = result.algo;
    p->ok = true;
  }
  return *plans_.emplace(key, std::move(p)).first->second;
}

bool CublasLtGemm::supports(const LtGemmArgs& a) { return plan(a).ok; }

void CublasLtGemm::matmul(const LtGemmArgs& a, Stream stream) {
  Plan& p = plan(a);
  MOE_CHECK(p.ok) << "CublasLtGemm::matmul without an algorithm (check supports() first)";
  const float alpha = a.alpha, beta = 0.f;
  MOE_CUBLAS_CHECK(cublasLtMatmul(lt(handle_), p.desc, &alpha, a.w, p.a, a.x, p.b, &beta, a.y, p.d,
                                  a.y, p.d, &p.algo, workspace_, workspace_bytes_, stream),
                   "linear (cuBLASLt)");
}

}  // namespace moe::cuda
