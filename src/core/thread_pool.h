// A fixed pool of worker threads for data-parallel loops on the CPU (reference backend).
// Owned by whoever creates it and passed explicitly; never global. parallel_for is not
// reentrant: a task must not call parallel_for on the same pool.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace moe {

class ThreadPool {
 public:
  // threads == 0 picks std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(i) for i in [0, n), split into contiguous chunks over the pool and the calling
  // thread; returns when all are done.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;  // guarded by mu_
  int64_t job_n_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace moe
