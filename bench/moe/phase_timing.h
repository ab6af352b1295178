// moe_bench --phases 1: where a layer's time goes, by CUDA events inside its graph. A fresh capture
// of the layer (a chain of kernel and memset nodes: one stream) gets an event-record node before
// its first node and after each node; each timed replay (after the usual L2 flush) is read back
// before the next, and each node's time is the median over the replays of the span from the event
// before it to the event after it (its launch gap included). The layer's own time stays the plain
// graph's (time_replays): the event nodes replace the chain's programmatic (PDL) edges by full
// ones, so phases overlapping by PDL are timed apart here. Kernels are named by cudaFuncGetName.
#pragma once

#include <cuda_runtime.h>
#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "replay_timing.h"

namespace moe::bench {

struct PhaseTimes {
  std::vector<std::string> names;  // per node, in order: a kernel's name, or "memset" / "other"
  std::vector<float> ms;           // per node: median over the replays
  std::string why;                 // non-empty: not timed (the graph is not a chain)
};

// The unqualified name of a kernel from its (mangled) symbol: "moe_wgmma_f8pair_kernel".
inline std::string phase_kernel_name(const void* func) {
  const char* sym = nullptr;
  if (cudaFuncGetName(&sym, func) != cudaSuccess || sym == nullptr) {
    cudaGetLastError();
    return "kernel";
  }
  int status = 0;
  char* dm = abi::__cxa_demangle(sym, nullptr, nullptr, &status);
  std::string s = status == 0 && dm != nullptr ? dm : sym;
  std::free(dm);
  // Cut the template arguments / parameters, then the namespaces (the name is before the first
  // '<' or '(' after the return type: "void moe::cuda::k<...>(...)").
  const size_t cut = s.find_first_of("<(");
  if (cut != std::string::npos) s.resize(cut);
  const size_t sp = s.rfind(' ');
  if (sp != std::string::npos) s = s.substr(sp + 1);
  const size_t ns = s.rfind("::");
  if (ns != std::string::npos) s = s.substr(ns + 2);
  return s.empty() ? "kernel" : s;
}

// `graph` (a capture of the layer; modified: event nodes added) timed per node over `iters`
// replays, each after the L2 flush of `g` (its st, flush, flush_bytes and flush_reads; a and b
// unused).
inline PhaseTimes time_phases(cudaGraph_t graph, const ReplayGraphs& g, int iters) {
  PhaseTimes out;
  size_t n = 0;
  CK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  CK(cudaGraphGetNodes(graph, nodes.data(), &n));
  size_t ne = 0;
  CK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &ne));
  std::vector<cudaGraphNode_t> from(ne), to(ne);
  std::vector<cudaGraphEdgeData> data(ne);
  CK(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &ne));
  // The chain: one root, every node at most one edge in and one out.
  auto index = [&](cudaGraphNode_t x) {
    for (size_t i = 0; i < n; ++i)
      if (nodes[i] == x) return static_cast<int>(i);
    return -1;
  };
  std::vector<int> next(n, -1), in(n, 0);
  bool chain = n > 0 && ne + 1 == n;
  for (size_t e = 0; e < ne && chain; ++e) {
    const int a = index(from[e]), b = index(to[e]);
    chain = a >= 0 && b >= 0 && next[a] < 0 && in[b] == 0;
    if (chain) next[a] = b, in[b] = 1;
  }
  int root = -1, roots = 0;
  for (size_t i = 0; i < n && chain; ++i)
    if (in[i] == 0) root = static_cast<int>(i), ++roots;
  if (!chain || roots != 1) {
    out.why = "the layer's graph is not a chain";
    return out;
  }
  std::vector<int> order;
  for (int i = root; i >= 0; i = next[i]) order.push_back(i);
  for (int i : order) {
    cudaGraphNodeType t;
    CK(cudaGraphNodeGetType(nodes[i], &t));
    if (t == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams kp{};
      CK(cudaGraphKernelNodeGetParams(nodes[i], &kp));
      out.names.push_back(phase_kernel_name(kp.func));
    } else {
      out.names.push_back(t == cudaGraphNodeTypeMemset ? "memset" : "other");
    }
  }
  // Events: ev[0] before the first node, ev[k + 1] after node k; the chain's edges rerouted
  // through them (each edge removed with its own data, PDL's programmatic type included).
  std::vector<cudaEvent_t> ev(order.size() + 1);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (size_t e = 0; e < ne; ++e)
    CK(cudaGraphRemoveDependencies(graph, &from[e], &to[e], &data[e], 1));
  cudaGraphNode_t prev;
  CK(cudaGraphAddEventRecordNode(&prev, graph, nullptr, 0, ev[0]));
  for (size_t k = 0; k < order.size(); ++k) {
    CK(cudaGraphAddDependencies(graph, &prev, &nodes[order[k]], nullptr, 1));
    CK(cudaGraphAddEventRecordNode(&prev, graph, &nodes[order[k]], 1, ev[k + 1]));
  }
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<std::vector<float>> t(order.size());
  for (int it = -3; it < iters; ++it) {
    flush_l2(g, it);
    CK(cudaGraphLaunch(exec, g.st));
    CK(cudaStreamSynchronize(g.st));
    if (it < 0) continue;
    for (size_t k = 0; k < order.size(); ++k) {
      float ms = 0.f;
      CK(cudaEventElapsedTime(&ms, ev[k], ev[k + 1]));
      t[k].push_back(ms);
    }
  }
  for (auto& v : t) out.ms.push_back(median(v));
  CK(cudaGraphExecDestroy(exec));
  for (auto& e : ev) CK(cudaEventDestroy(e));
  return out;
}

// Whether a PhaseTimes node is one of the GEMMs' kernels (moe_gemm*, moe_tile_gemm*, moe_wgmma*);
// moe_quant_rows (h to E4M3 between them) is not counted.
inline bool phase_is_gemm(const std::string& name) {
  return name.rfind("moe_gemm", 0) == 0 || name.rfind("moe_tile_gemm", 0) == 0 ||
         name.rfind("moe_wgmma", 0) == 0;
}

}  // namespace moe::bench
