// Microbenchmark (session 30, docs/perf.md): cost of an empty big-smem kernel between two streaming
// kernels in a CUDA graph, against a conditional (IF) node whose body holds it, set false / true
// by the first kernel (cudaGraphSetConditional). Build: nvcc -O2 -arch=sm_90a -std=c++17
// -cudart static -o cond_bench 2026-12-03-graph-conditional-bench.cu (not part of the build).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x)                                                                \
  do {                                                                       \
    cudaError_t e_ = (x);                                                    \
    if (e_ != cudaSuccess) {                                                 \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

__global__ void work(const float4* __restrict__ src, size_t n, float* sink, const int* flag,
                     cudaGraphConditionalHandle h, int use_h) {
  extern __shared__ float4 sm[];
  float4 a = {0, 0, 0, 0};
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float4 v = __ldg(src + i);
    a.x += v.x;
    a.y += v.y;
    a.z += v.z;
    a.w += v.w;
  }
  if (a.x + a.y + a.z + a.w == 12345.f) sink[0] = a.x;
  if (use_h && blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(h, *flag);
  (void)sm;
}
__global__ void empty_big(const int* flag, float* sink, int smem_bytes) {
  extern __shared__ float4 sm[];
  if (*flag == 0 || smem_bytes < 16 * static_cast<int>(blockDim.x)) return;
  sm[threadIdx.x] = make_float4(threadIdx.x, 0, 0, 0);
  __syncthreads();
  if (sm[(threadIdx.x + 1) % blockDim.x].x == -1.f) sink[1] = 1;
}

int main() {
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t bytes = 40u << 20;  // 40 MB per work kernel (~10 us)
  float4* src;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMemset(src, 1, bytes));
  float* sink;
  CK(cudaMalloc(&sink, 64));
  int* flag;
  CK(cudaMalloc(&flag, 4));
  const int big = 200 * 1024, ring = 48 * 1024;
  CK(cudaFuncSetAttribute(empty_big, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
  CK(cudaFuncSetAttribute(work, cudaFuncAttributeMaxDynamicSharedMemorySize, ring));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t n = bytes / 16;
  const int reps = 20;
  // mode 0: A C; 1: A B(big) C; 2: A B(small smem) C; 3: A IF{B} C
  for (int flagv = 0; flagv < 2; ++flagv) {
    CK(cudaMemcpy(flag, &flagv, 4, cudaMemcpyHostToDevice));
    for (int mode = 0; mode < 4; ++mode) {
      cudaGraph_t g;
      CK(cudaGraphCreate(&g, 0));
      CK(cudaStreamBeginCaptureToGraph(s, g, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
      for (int r = 0; r < reps; ++r) {
        cudaGraphConditionalHandle h = 0;
        if (mode == 3) CK(cudaGraphConditionalHandleCreate(&h, g, 0, cudaGraphCondAssignDefault));
        work<<<sms * 4, 128, ring, s>>>(src, n, sink, flag, h, mode == 3);
        if (mode == 1) empty_big<<<sms, 384, big, s>>>(flag, sink, big);
        if (mode == 2) empty_big<<<sms, 384, 0, s>>>(flag, sink, 0);
        if (mode == 3) {
          cudaStreamCaptureStatus st;
          const cudaGraphNode_t* deps = nullptr;
          size_t nd = 0;
          cudaGraph_t cg;
          CK(cudaStreamGetCaptureInfo(s, &st, nullptr, &cg, &deps, nullptr, &nd));
          cudaGraphNodeParams cp = {};
          cp.type = cudaGraphNodeTypeConditional;
          cp.conditional.handle = h;
          cp.conditional.type = cudaGraphCondTypeIf;
          cp.conditional.size = 1;
          cudaGraphNode_t node;
          CK(cudaGraphAddNode(&node, cg, deps, nullptr, nd, &cp));
          cudaGraph_t body = cp.conditional.phGraph_out[0];
          CK(cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1,
                                                 cudaStreamSetCaptureDependencies));
          cudaStream_t s2;
          CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
          CK(cudaStreamBeginCaptureToGraph(s2, body, nullptr, nullptr, 0,
                                           cudaStreamCaptureModeRelaxed));
          empty_big<<<sms, 384, big, s2>>>(flag, sink, big);
          cudaGraph_t out;
          CK(cudaStreamEndCapture(s2, &out));
          CK(cudaStreamDestroy(s2));
        }
        work<<<sms * 4, 128, ring, s>>>(src, n, sink, flag, 0, 0);
      }
      CK(cudaStreamEndCapture(s, &g));
      cudaGraphExec_t ge;
      CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t a, b;
      CK(cudaEventCreate(&a));
      CK(cudaEventCreate(&b));
      std::vector<float> t;
      for (int i = 0; i < 30; ++i) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      std::printf("flag %d mode %d (%s): %.2f us per rep (median of 30 graphs of %d reps)\n", flagv,
                  mode,
                  mode == 0   ? "A C"
                  : mode == 1 ? "A empty(200KB) C"
                  : mode == 2 ? "A empty(0 smem) C"
                              : "A IF{empty 200KB} C",
                  t[15] * 1000 / reps, reps);
      CK(cudaGraphExecDestroy(ge));
      CK(cudaGraphDestroy(g));
    }
  }
  return 0;
}
