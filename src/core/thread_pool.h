// A fixed pool of worker threads for data-parallel loops. The calling thread takes part, so a
// pool of size N uses N-1 workers. Nested or concurrent parallel_for calls never deadlock: a call
// made while the pool is busy (from a kernel, or from a second session) runs inline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lumen {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return num_threads_; }

  // Calls fn(begin, end) over disjoint chunks covering [0, n), each at least `grain` long (except
  // the last). Returns when all chunks are done; rethrows the first exception a chunk threw.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

  // Threads to use by default: hardware concurrency (at least 1).
  static int default_threads();

 private:
  struct Job {
    const std::function<void(int64_t, int64_t)> *fn = nullptr;
    int64_t n = 0, chunk = 0, chunks = 0;
  };
  void worker_loop();
  void run_chunks(const Job &job);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex dispatch_mutex_;  // one parallel_for at a time uses the workers

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  int active_ = 0;

  Job job_;  // guarded by mutex_; workers copy it when they wake
  std::atomic<int64_t> next_chunk_{0};
  std::exception_ptr error_;
};

// The process-wide pool used by eager ops; a Runtime may own its own.
ThreadPool &default_thread_pool();

}  // namespace lumen
