#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace lumen {
namespace {

// Set on pool workers and on a thread while it runs a parallel_for: a nested call runs inline.
thread_local bool in_parallel_region = false;

// How long an idle worker spins before sleeping: covers the gaps between the parallel loops of
// consecutive kernels, while a pool left idle stops using a core soon.
constexpr auto kSpinTime = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

constexpr uint64_t kMaxChunks = 0xffff;

uint64_t claim_word(uint32_t id, uint64_t end, uint64_t next) {
  return (uint64_t(id) << 32) | (end << 16) | next;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(std::max(1, num_threads)), claims_(new Claim[size_t(num_threads_)]) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  job_id_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  for (auto &t : workers_) t.join();
}

int ThreadPool::default_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

void ThreadPool::run_chunks(uint32_t id, int self) {
  for (int k = 0; k < num_threads_; ++k) {
    std::atomic<uint64_t> &claim = claims_[size_t((self + k) % num_threads_)].word;
    uint64_t word = claim.load(std::memory_order_acquire);
    for (;;) {
      if (uint32_t(word >> 32) != id) return;  // a newer job: this one is done
      const uint64_t end = (word >> 16) & kMaxChunks, idx = word & kMaxChunks;
      if (idx >= end) break;  // this range is taken: try the next participant's
      // The claim succeeds only while the word still names this job, so the job's fields read
      // below are the ones it was published with.
      if (!claim.compare_exchange_weak(word, word + 1, std::memory_order_acquire,
                                       std::memory_order_acquire))
        continue;
      const int64_t begin = chunk_begin(int64_t(idx)), stop = chunk_begin(int64_t(idx) + 1);
      try {
        body_.call(body_.obj, begin, stop);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      done_.fetch_add(1, std::memory_order_release);
      word = claim.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::worker_loop(int self) {
  in_parallel_region = true;
  uint32_t seen = 0;
  for (;;) {
    // Spin first: the next job usually comes within microseconds.
    uint32_t id = job_id_.load(std::memory_order_acquire);
    if (id == seen) {
      const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
      for (int i = 1;; ++i) {
        cpu_relax();
        id = job_id_.load(std::memory_order_acquire);
        if (id != seen) break;
        if (i % 64 == 0) {
          if (std::chrono::steady_clock::now() > deadline) break;
          // On a busy machine this thread may share a core with the caller: let it run.
          if (i % 256 == 0) std::this_thread::yield();
        }
      }
    }
    if (id == seen) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return job_id_.load() != seen; });
      sleepers_.fetch_sub(1);
      id = job_id_.load();
    }
    if (stopping_.load()) return;
    seen = id;
    run_chunks(id, self);
  }
}

void ThreadPool::dispatch(int64_t n, int64_t grain, Body body) {
  grain = std::max<int64_t>(1, grain);
  // A few chunks per thread balances uneven chunks without much scheduling overhead. Their count
  // is a multiple of the threads and their sizes differ by at most one item (fixed-size chunks
  // made 14 items 7 chunks of 2, ranges of 6 and 8 items: ResNet-50's 28x28 Winograd convs, 2
  // threads). The longer chunks come first, in the dispatching thread's range: it starts before
  // the workers see the job (spreading them evenly measured 0.5-2% slower on four of five CNNs).
  const int64_t threads = num_threads_;
  int64_t chunks = std::min({int64_t(kMaxChunks), threads * 4, (n + grain - 1) / grain});
  if (chunks > threads) chunks -= chunks % threads;
  if (chunks <= 1 || in_parallel_region || busy_.exchange(true, std::memory_order_acquire)) {
    body.call(body.obj, 0, n);
    return;
  }
  body_ = body;
  n_ = n;
  chunks_ = chunks;
  done_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  const uint32_t id = job_id_.load(std::memory_order_relaxed) + 1;
  // Participant t's range: chunks [chunks * t / T, chunks * (t + 1) / T). Publishes the fields
  // above to whoever claims a chunk (release), then wakes the workers.
  for (int t = 0; t < num_threads_; ++t)
    claims_[size_t(t)].word.store(claim_word(id, uint64_t(chunks * (t + 1) / num_threads_),
                                             uint64_t(chunks * t / num_threads_)),
                                  std::memory_order_release);
  job_id_.store(id);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  in_parallel_region = true;
  run_chunks(id, 0);
  in_parallel_region = false;
  // Every chunk is claimed; wait for those still running on workers.
  for (int i = 1; done_.load(std::memory_order_acquire) != chunks; ++i) {
    cpu_relax();
    if (i % 256 == 0) std::this_thread::yield();
  }
  std::exception_ptr error = std::move(error_);
  error_ = nullptr;
  busy_.store(false, std::memory_order_release);
  if (error) std::rethrow_exception(error);
}

ThreadPool &default_thread_pool() {
  static ThreadPool pool(ThreadPool::default_threads());
  return pool;
}

}  // namespace lumen
