#include "core/thread_pool.h"

#include <algorithm>

namespace moe {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {
void chunk(int64_t n, int parts, int index, int64_t* begin, int64_t* end) {
  int64_t base = n / parts, rem = n % parts;
  *begin = index * base + std::min<int64_t>(index, rem);
  *end = *begin + base + (index < rem ? 1 : 0);
}
}  // namespace

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  cv_start_.notify_all();
  int64_t b, e;
  chunk(n, size(), 0, &b, &e);
  if (b < e) fn(b, e);
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    int64_t b, e;
    chunk(n, size(), index, &b, &e);
    if (b < e) (*job)(b, e);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) cv_done_.notify_one();
    }
  }
}

}  // namespace moe
