#include "core/thread_pool.h"

#include <algorithm>

namespace lumen {
namespace {
// Set on pool workers and on a thread while it runs a parallel_for: a nested call runs inline.
thread_local bool in_parallel_region = false;
}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto &t : workers_) t.join();
}

int ThreadPool::default_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

void ThreadPool::run_chunks(const Job &job) {
  for (;;) {
    const int64_t chunk = next_chunk_.fetch_add(1);
    if (chunk >= job.chunks) return;
    const int64_t begin = chunk * job.chunk;
    const int64_t end = std::min(job.n, begin + job.chunk);
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop() {
  in_parallel_region = true;
  uint64_t seen = 0;
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      ++active_;
    }
    run_chunks(job);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--active_ == 0) done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  std::unique_lock<std::mutex> dispatch(dispatch_mutex_, std::defer_lock);
  if (workers_.empty() || n <= grain || in_parallel_region || !dispatch.try_lock()) {
    fn(0, n);
    return;
  }
  // A few chunks per thread balances uneven chunks without much scheduling overhead.
  const int64_t max_chunks = static_cast<int64_t>(num_threads_) * 4;
  const int64_t chunks = std::min(max_chunks, (n + grain - 1) / grain);
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunk = (n + chunks - 1) / chunks;
  job.chunks = (n + job.chunk - 1) / job.chunk;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // A worker that woke late for the previous job may still hold its copy: let it finish.
    done_.wait(lock, [&] { return active_ == 0; });
    job_ = job;
    next_chunk_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  in_parallel_region = true;
  run_chunks(job);
  in_parallel_region = false;
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // Every chunk is claimed; wait for the workers still running theirs.
    done_.wait(lock, [&] { return active_ == 0; });
    job_ = Job{};
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

ThreadPool &default_thread_pool() {
  static ThreadPool pool(ThreadPool::default_threads());
  return pool;
}

}  // namespace lumen
