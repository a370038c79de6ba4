#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace lumen {
namespace {

TEST(ThreadPool, CoversRangeExactlyOnce) {
  ThreadPool pool(4);
  for (int64_t n : {1, 7, 100, 100003}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, 3, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

// Chunks of nearly equal size, a multiple of the threads in number: each thread's own range then
// holds n / threads items, give or take one (14 items in fixed chunks of 2 gave ranges of 6 and 8).
TEST(ThreadPool, SplitsIntoEvenChunks) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {5, 7, 14, 26, 1000}) {
      std::mutex mutex;
      std::vector<std::pair<int64_t, int64_t>> chunks;
      pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
        std::lock_guard<std::mutex> lock(mutex);
        chunks.emplace_back(b, e);
      });
      std::sort(chunks.begin(), chunks.end());
      int64_t lo = n, hi = 0, at = 0;
      for (auto [b, e] : chunks) {
        ASSERT_EQ(b, at) << "n=" << n;
        lo = std::min(lo, e - b), hi = std::max(hi, e - b), at = e;
      }
      EXPECT_EQ(at, n);
      EXPECT_LE(hi - lo, 1) << "n=" << n << " threads=" << threads;
      if (n >= 2 * threads) {
        EXPECT_EQ(chunks.size() % size_t(threads), 0u) << "n=" << n;
      }
    }
  }
}

TEST(ThreadPool, NestedAndConcurrentCallsComplete) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  auto work = [&] {
    for (int rep = 0; rep < 50; ++rep)
      pool.parallel_for(64, 1, [&](int64_t b, int64_t e) {
        pool.parallel_for(e - b, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
      });
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2 * 50 * 64);
}

TEST(ThreadPool, PropagatesExceptions) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(1000, 1,
                                 [](int64_t b, int64_t) {
                                   if (b > 500) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  // Still usable afterwards.
  std::atomic<int64_t> n{0};
  pool.parallel_for(10, 1, [&](int64_t b, int64_t e) { n += e - b; });
  EXPECT_EQ(n.load(), 10);
}

// Back-to-back jobs of different sizes: a worker still finishing (or just waking for) one job must
// never run chunks of the next with stale bounds.
TEST(ThreadPool, RapidJobsOfChangingSizeStayExact) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(4096);
  for (int rep = 0; rep < 2000; ++rep) {
    const int64_t n = 1 + (rep * 7919) % 4096;
    pool.parallel_for(n, 1 + rep % 5, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < 4096; ++i) {
      ASSERT_EQ(hits[i].load(), i < n ? 1 : 0) << "rep=" << rep << " n=" << n << " i=" << i;
      hits[i] = 0;
    }
  }
}

// Workers that went to sleep (idle longer than they spin) are woken by the next job, and a pool
// whose workers sleep is destroyed cleanly.
TEST(ThreadPool, WakesSleepingWorkers) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 3; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::atomic<int64_t> n{0};
    pool.parallel_for(1000, 1, [&](int64_t b, int64_t e) { n += e - b; });
    EXPECT_EQ(n.load(), 1000);
  }
}

// The body is called by reference, so a move-only or non-copyable callable works.
TEST(ThreadPool, AcceptsNonCopyableBodies) {
  ThreadPool pool(2);
  struct Body {
    std::atomic<int64_t> total{0};
    void operator()(int64_t b, int64_t e) { total += e - b; }
  } body;
  pool.parallel_for(100, 1, body);
  EXPECT_EQ(body.total.load(), 100);
  const std::function<void(int64_t, int64_t)> fn = [&](int64_t b, int64_t e) { body(b, e); };
  pool.parallel_for(100, 1, fn);
  EXPECT_EQ(body.total.load(), 200);
}

}  // namespace
}  // namespace lumen
