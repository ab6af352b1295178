// DecodeGraphRunner: runs decode steps as CUDA graphs, one graph per key (the batch size, or
// any value that fixes the step's shapes: token count, page-table width). A key's first step
// runs eagerly (it sizes the workspace and op scratch arenas), its second is captured and then
// replayed, and every later step is a replay whose inputs were refreshed in place: the step
// function runs once more on a RefreshOps, which executes only the host side of the step (the
// model builds its batch layout, advances sequence lengths) and writes each copy_from_host
// (ids, token_seq, positions, seq_lens, page table) into the pinned staging the graph's memcpy
// nodes read, checking that destination and size are the captured ones. Kernels are not run.
//
// Contract for the step function: for a given key, it makes the same sequence of op calls on
// the same workspace addresses (keep the page-table width fixed, e.g. reserve every sequence's
// pages up front). If the workspace or the ops' scratch arena grows after a capture (an eager
// step of a larger shape), every graph is dropped and recaptured, so a replay never reads freed
// memory; warm the largest key first. The runner is the only user of the CudaOps' capture
// staging while it lives. Not thread-safe.
//
// Sampling: CudaOps::sample passes each row's step counter (and sampling parameters) in the
// kernel parameters, so a captured launch would replay the capture's counter. A sample call
// with a temperature (a row with temperature > 0 and top_k != 1) is therefore kept out of the
// graph and launched eagerly right after each replay with this step's arguments; it must be
// the step's last op. Greedy sample calls are captured like any op.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_arena.h"
#include "core/status.h"

namespace moe::cuda {

class DecodeGraphRunner {
 public:
  // Enqueues one step's work on `ops` (e.g. Model::forward with the step's sequences).
  using StepFn = std::function<Status(ops::Ops& ops)>;
  enum class Mode { kEager, kCaptured, kReplayed };

  // `ws`: the workspace the step function allocates from (its addresses are baked into graphs).
  DecodeGraphRunner(CudaOps& ops, DeviceArena& ws);
  ~DecodeGraphRunner();
  DecodeGraphRunner(const DecodeGraphRunner&) = delete;
  DecodeGraphRunner& operator=(const DecodeGraphRunner&) = delete;

  // Runs one step for `key` (eager, captured + replayed, or refreshed + replayed). Outputs are
  // ready in stream order, as after an eager step. A Status from `step` is returned unchanged.
  Status run(int64_t key, const StepFn& step);
  // Replays `key`'s graph again with the inputs of its last step (benchmarks).
  void replay(int64_t key);
  bool captured(int64_t key) const;
  Mode last_mode() const { return last_mode_; }
  // Drops every graph (and the capture staging they read).
  void reset();

 private:
  struct Entry {
    bool warmed = false;
    std::unique_ptr<CudaGraph> graph;
    std::vector<CudaOps::CapturedCopy> copies;
    int deferred_sample = -1;  // index of the step's sample call launched after each replay
  };
  void launch(Entry& e);
  void drop_graphs_if_arenas_grew();

  CudaOps& ops_;
  DeviceArena& ws_;
  std::map<int64_t, Entry> entries_;
  int ws_growths_ = 0, scratch_growths_ = 0;  // at the last capture
  void* replay_done_ = nullptr;               // cudaEvent_t: the last replay finished
  bool replay_recorded_ = false;
  Mode last_mode_ = Mode::kEager;
};

}  // namespace moe::cuda
