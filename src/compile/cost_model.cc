#include "compile/cost_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "core/cache_files.h"
#include "core/thread_pool.h"
#include "runtime/op_runner.h"

namespace lumen {
namespace {

using Clock = std::chrono::steady_clock;

// A tensor of `shape` in `backend`'s memory, filled with small values.
Tensor device_tensor(Backend &backend, const Shape &shape) {
  Tensor host = Tensor::empty(shape);
  float *p = host.data<float>();
  for (int64_t i = 0; i < host.numel(); ++i) p[i] = static_cast<float>(i % 7) * 0.25f;
  if (backend.device().is_host()) return host;
  Tensor dev = Tensor::empty(shape, DType::Float32, &backend.allocator());
  backend.copy(dev, host, nullptr);
  return dev;
}

// The fastest of `reps` timed calls of `fn` (after one untimed), in microseconds.
template <class Fn>
double best_us(int reps, Fn &&fn) {
  fn();
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return best;
}

// One float32 op on `backend` with inputs of `shapes`, timed.
double time_op(Backend &backend, const char *op, const std::vector<Shape> &shapes,
               const Shape &out_shape, int reps, ThreadPool &pool) {
  KernelFn kernel = backend.find_kernel(op, DType::Float32);
  if (!kernel) fail("calibrating '", backend.name(), "': it has no float32 ", op, " kernel");
  std::vector<Tensor> inputs;
  std::vector<const Tensor *> pointers;
  for (const Shape &s : shapes) inputs.push_back(device_tensor(backend, s));
  for (const Tensor &t : inputs) pointers.push_back(&t);
  const std::vector<TensorType> types{{DType::Float32, out_shape}};
  const Attributes attrs;
  std::unique_ptr<Stream> stream = backend.new_stream();
  return best_us(reps, [&] {
    run_kernel(kernel, backend, pointers, &types, 1, attrs, pool, op, "calibration");
    stream->synchronize();
  });
}

DeviceProfile measure_profile(Backend &backend, ThreadPool &pool) {
  constexpr int64_t kGemm = 512, kLarge = int64_t{1} << 22, kTiny = 16;
  DeviceProfile p;
  p.launch_us = time_op(backend, "add", {{kTiny}, {kTiny}}, {kTiny}, 20, pool);
  const double add_us = time_op(backend, "add", {{kLarge}, {kLarge}}, {kLarge}, 3, pool);
  p.gbytes_per_s = 3.0 * kLarge * sizeof(float) / std::max(add_us - p.launch_us, 1e-3) / 1e3;
  const double gemm_us =
      time_op(backend, "matmul", {{kGemm, kGemm}, {kGemm, kGemm}}, {kGemm, kGemm}, 3, pool);
  p.gflops = 2.0 * kGemm * kGemm * kGemm / std::max(gemm_us - p.launch_us, 1e-3) / 1e3;
  return p;
}

LinkProfile measure_link(Backend &backend) {
  constexpr int64_t kLarge = int64_t{1} << 21, kTiny = 16;  // 8 MiB, 64 bytes
  double latency = 0, large = 0;
  for (const int64_t n : {kTiny, kLarge}) {
    Tensor host = Tensor::zeros({n});
    Tensor dev = Tensor::empty({n}, DType::Float32, &backend.allocator());
    std::unique_ptr<Stream> stream = backend.new_stream();
    const double us = best_us(n == kTiny ? 20 : 3, [&] {
      backend.copy(dev, host, stream.get());
      backend.copy(host, dev, stream.get());
      stream->synchronize();
    });
    (n == kTiny ? latency : large) = us / 2;
  }
  return {.gbytes_per_s = kLarge * sizeof(float) / std::max(large - latency, 1e-3) / 1e3,
          .latency_us = latency};
}

int size_bucket(const OpWork &work) {
  return static_cast<int>(std::log2(work.flops + work.bytes + 1));
}

bool positive_finite(double v) {
  return std::isfinite(v) && v > 0;
}

}  // namespace

CostModel &CostModel::instance() {
  static auto *model = new CostModel;
  return *model;
}

std::string CostModel::key(Backend &backend, ThreadPool &pool) {
  const int threads = backend.device().is_host() ? pool.size() : 0;
  // Made once per backend and thread count: the driver id and the build id read files.
  std::lock_guard<std::mutex> lock(keys_mutex_);
  std::string &k = keys_[{&backend, threads}];
  if (k.empty()) {
    k = std::string(backend.name()) + " / " + backend.driver_id() + " / " + build_id() +
        " / threads " + std::to_string(threads);
    std::replace_if(
        k.begin(), k.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
  }
  return k;
}

void CostModel::load_locked() {
  if (loaded_) return;
  loaded_ = true;
  path_ = cache_file_path("device_costs.tsv");
  std::ifstream in(path_);
  int malformed = 0;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream parts(line);
    for (std::string field; std::getline(parts, field, '\t');) f.push_back(field);
    std::vector<double> v;
    for (size_t i = 2; i < f.size(); ++i) {
      char *end = nullptr;
      v.push_back(std::strtod(f[i].c_str(), &end));
      if (end == f[i].c_str() || *end || !std::isfinite(v.back()) || v.back() < 0) v.back() = -1;
    }
    const bool ok = std::all_of(v.begin(), v.end(), [](double x) { return x >= 0; });
    if (ok && f.size() == 5 && f[1] == "profile" && positive_finite(v[0]) && positive_finite(v[1]))
      profiles_[f[0]] = {.gflops = v[0], .gbytes_per_s = v[1], .launch_us = v[2]};
    else if (ok && f.size() == 4 && f[1] == "link" && positive_finite(v[0]))
      links_[f[0]] = {.gbytes_per_s = v[0], .latency_us = v[1]};
    else
      ++malformed;
  }
  if (malformed)
    std::fprintf(stderr, "lumen: ignoring %d malformed line%s of %s (measuring again)\n", malformed,
                 malformed == 1 ? "" : "s", path_.c_str());
}

void CostModel::append_line(const std::string &line) const {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ignored);
  // One write() per line in append mode: concurrent processes do not interleave their lines.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

DeviceProfile CostModel::profile(Backend &backend, ThreadPool &pool) {
  const std::string k = key(backend, pool);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    load_locked();
    if (auto it = profiles_.find(k); it != profiles_.end()) return it->second;
  }
  // A device standing in for another declares its speed, unless the cache says otherwise.
  if (Backend &host = host_backend(); &host != &backend)
    if (std::optional<DeviceProfile> declared = backend.declared_profile(profile(host, pool)))
      return *declared;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = profiles_.find(k); it != profiles_.end()) return it->second;  // measured meanwhile
  const auto start = Clock::now();
  if (isatty(2))
    std::fprintf(stderr, "lumen: measuring %s for placement (once per device)...",
                 std::string(backend.name()).c_str());
  const DeviceProfile p = measure_profile(backend, pool);
  if (isatty(2))
    std::fprintf(stderr, " %.1f GFLOP/s, %.1f GB/s, %.1f us per step (%.2f s)\n", p.gflops,
                 p.gbytes_per_s, p.launch_us,
                 std::chrono::duration<double>(Clock::now() - start).count());
  profiles_[k] = p;
  std::ostringstream line;
  line << k << "\tprofile\t" << p.gflops << '\t' << p.gbytes_per_s << '\t' << p.launch_us << '\n';
  append_line(line.str());
  return p;
}

LinkProfile CostModel::link(Backend &backend, ThreadPool &pool) {
  if (backend.device().is_host()) return {.gbytes_per_s = 0, .latency_us = 0};
  const std::string k = key(backend, pool);
  std::lock_guard<std::mutex> lock(mutex_);
  load_locked();
  if (auto it = links_.find(k); it != links_.end()) return it->second;
  if (std::optional<LinkProfile> declared = backend.declared_link()) return *declared;
  const LinkProfile l = measure_link(backend);
  links_[k] = l;
  std::ostringstream line;
  line << k << "\tlink\t" << l.gbytes_per_s << '\t' << l.latency_us << '\n';
  append_line(line.str());
  return l;
}

double CostModel::step_us(Backend &backend, std::string_view op, DType dtype, const OpWork &work,
                          ThreadPool &pool) {
  const DeviceProfile p = profile(backend, pool);
  const double roofline =
      p.launch_us + std::max(work.flops / p.gflops, work.bytes / p.gbytes_per_s) / 1e3;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = observed_.find({key(backend, pool), std::string(op), dtype, size_bucket(work)});
  if (it == observed_.end()) return roofline;
  // A measurement of this op and size on this device is better evidence than the roofline: it
  // takes 80% of the estimate at once, and more as measurements accumulate.
  const double weight = it->second.samples / (it->second.samples + 0.25);
  return weight * it->second.us + (1 - weight) * roofline;
}

double CostModel::copy_us(Backend &from, Backend &to, double bytes, ThreadPool &pool) {
  if (from.device() == to.device()) return 0;
  double us = 0;
  for (Backend *side : {&from, &to}) {
    if (side->device().is_host()) continue;
    const LinkProfile l = link(*side, pool);
    us += l.latency_us + bytes / l.gbytes_per_s / 1e3;
  }
  return us;
}

void CostModel::record(Backend &backend, std::string_view op, DType dtype, const OpWork &work,
                       double us, ThreadPool &pool) {
  const std::string k = key(backend, pool);
  std::lock_guard<std::mutex> lock(mutex_);
  Observed &o = observed_[{k, std::string(op), dtype, size_bucket(work)}];
  o.us = o.samples == 0 ? us : 0.8 * o.us + 0.2 * us;  // recent runs weigh more
  o.samples = std::min(o.samples + 1, 20);
}

void CostModel::reset() {
  {
    std::lock_guard<std::mutex> lock(keys_mutex_);
    keys_.clear();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  loaded_ = false;
  profiles_.clear();
  links_.clear();
  observed_.clear();
}

}  // namespace lumen
