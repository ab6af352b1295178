#include "backends/cuda/cuda_graph.h"

#include "backends/cuda/cuda_check.h"

namespace moe::cuda {

CudaGraph::~CudaGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void CudaGraph::begin_capture(CudaOps& ops) {
  MOE_CHECK(!exec_ && !graph_) << "CudaGraph captures once";
  MOE_CUDA_CHECK(cudaStreamBeginCapture(ops.stream(), cudaStreamCaptureModeThreadLocal),
                 "graph capture");
}

void CudaGraph::end_capture(CudaOps& ops) {
  cudaGraph_t g = nullptr;
  MOE_CUDA_CHECK(cudaStreamEndCapture(ops.stream(), &g), "graph capture");
  graph_ = g;
  cudaGraphExec_t e = nullptr;
  MOE_CUDA_CHECK(cudaGraphInstantiate(&e, g, 0), "graph instantiate");
  exec_ = e;
}

void CudaGraph::replay(CudaOps& ops) {
  MOE_CHECK(exec_) << "replay of a graph that was not captured";
  MOE_CUDA_CHECK(cudaGraphLaunch(exec_, ops.stream()), "graph replay");
}

}  // namespace moe::cuda
