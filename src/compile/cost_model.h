// The router's cost model: how long a step takes on a device and a copy between memory spaces,
// estimated from each device's profile (compile time: a roofline over the step's flops and bytes,
// graph/op_work.h) and corrected by timings of real runs as they arrive.
//
// Profiles come from the cache, else from a test device's declaration, else from calibration
// micro-benchmarks run on a device's first use by the router (a GEMM for its flop rate, a large
// and a tiny element-wise add for its bandwidth and per-step cost, copies both ways for its link
// to host memory; well under a second on a CPU). They persist in $LUMEN_CACHE_DIR/device_costs.tsv
// (default
// ~/.cache/lumen), keyed by backend, device model and driver, build and thread count; a stale
// entry (another build or driver) is not used, and malformed lines are ignored with a warning.
// Only compiles with two candidate devices for some node ever calibrate: on a machine with one,
// routing costs nothing.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "core/backend.h"
#include "graph/op_work.h"

namespace lumen {

class ThreadPool;

class CostModel {
 public:
  // The process-wide model; the cache file is read on first use.
  static CostModel &instance();

  // Estimated microseconds of one step of `op` on `backend`, run with `pool` for host devices.
  double step_us(Backend &backend, std::string_view op, DType dtype, const OpWork &work,
                 ThreadPool &pool);
  // Microseconds to copy `bytes` from the memory of `from` to that of `to` (0 when they share it;
  // a copy between two devices goes through the host).
  double copy_us(Backend &from, Backend &to, double bytes, ThreadPool &pool);
  // A real run's time of a step: blended into the estimates for its device, op, dtype and size.
  void record(Backend &backend, std::string_view op, DType dtype, const OpWork &work, double us,
              ThreadPool &pool);

  DeviceProfile profile(Backend &backend, ThreadPool &pool);
  // What the cache file keys `backend`'s measurements by (one line per profile or link).
  std::string key(Backend &backend, ThreadPool &pool);
  LinkProfile link(Backend &backend, ThreadPool &pool);  // host memory <-> backend's memory

  // Forgets what this process measured or read (the file stays): tests start from the cache.
  void reset();

 private:
  CostModel() = default;
  void load_locked();
  void append_line(const std::string &line) const;

  struct Observed {
    double us = 0;
    int samples = 0;
  };
  std::mutex mutex_, keys_mutex_;
  std::map<std::pair<const Backend *, int>, std::string> keys_;  // key() per backend, threads
  bool loaded_ = false;
  std::string path_;
  std::map<std::string, DeviceProfile> profiles_;  // by key()
  std::map<std::string, LinkProfile> links_;       // by key()
  // By key(), op, dtype and size bucket (log2 of flops + bytes).
  std::map<std::tuple<std::string, std::string, DType, int>, Observed> observed_;
};

}  // namespace lumen
