// CudaGraph: captures the work a CudaOps enqueues between begin_capture() and end_capture()
// (e.g. one Model::forward decode step) and replays it. Host-to-device copies made while
// capturing read the CudaOps' pinned capture staging, so a replay sees the data of the capture.
#pragma once

#include "backends/cuda/cuda_ops.h"

struct CUgraph_st;
struct CUgraphExec_st;

namespace moe::cuda {

class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  void begin_capture(CudaOps& ops);
  // Ends the capture and instantiates the graph.
  void end_capture(CudaOps& ops);
  // Enqueues one replay on the ops' stream (no host synchronisation).
  void replay(CudaOps& ops);
  bool ready() const { return exec_ != nullptr; }

 private:
  CUgraph_st* graph_ = nullptr;
  CUgraphExec_st* exec_ = nullptr;
};

}  // namespace moe::cuda
