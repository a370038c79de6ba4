// lumen_peak_flops: measures the machine's FP32 fused-multiply-add peak, the 100% mark that
// bench/suite.py divides GEMM throughput by.
//
// Every thread runs independent chains of vector FMAs on accumulators that stay in registers:
// enough chains to cover the FMA latency on two FMA ports (16 zmm for AVX-512, 12 ymm for
// AVX2+FMA), so the loop is bound by FMA throughput alone. The widest instruction set the CPU
// supports is chosen at run time. Each thread count is measured over several trials and the best
// is reported, since interference can only slow a trial down.
//
//   lumen_peak_flops [--threads 1,2] [--isa auto|avx512|avx2|generic] [--seconds S] [--trials N]
//
// prints one JSON object: {"isa", "vector_floats", "accumulators", "results": [{"threads",
// "gflops", "seconds"}, ...]}. One FMA counts as two floating-point operations.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LUMEN_PEAK_X86 1
#endif

namespace {

// Multiplier and addend of every FMA: acc = acc * kScale + kStep converges to kStep / (1 -
// kScale), so the values stay normal (no overflow, no denormal slow paths) however long it runs.
// They are read through volatiles so the compiler cannot fold the chains.
volatile float g_scale = 0.999f;
volatile float g_step = 1e-3f;
volatile float g_sink = 0.0f;  // every kernel's result lands here so the loops are not dropped

struct Kernel {
  const char *isa;
  int vector_floats;  // float lanes per instruction
  int accumulators;   // independent FMA chains
  float (*run)(int64_t iterations);

  double flops_per_iteration() const { return 2.0 * vector_floats * accumulators; }
};

#ifdef LUMEN_PEAK_X86

__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t iterations) {
  constexpr int kAcc = 16;
  const __m512 scale = _mm512_set1_ps(g_scale);
  const __m512 step = _mm512_set1_ps(g_step);
  __m512 acc[kAcc];
  for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_fmadd_ps(acc[j], scale, step);
  }
  __m512 sum = acc[0];
  for (int j = 1; j < kAcc; ++j) sum = _mm512_add_ps(sum, acc[j]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0.0f;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iterations) {
  constexpr int kAcc = 12;
  const __m256 scale = _mm256_set1_ps(g_scale);
  const __m256 step = _mm256_set1_ps(g_step);
  __m256 acc[kAcc];
  for (int j = 0; j < kAcc; ++j) acc[j] = _mm256_set1_ps(static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < kAcc; ++j) acc[j] = _mm256_fmadd_ps(acc[j], scale, step);
  }
  __m256 sum = acc[0];
  for (int j = 1; j < kAcc; ++j) sum = _mm256_add_ps(sum, acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0.0f;
  for (float v : lanes) total += v;
  return total;
}

#endif  // LUMEN_PEAK_X86

// Any other CPU: 128-bit vectors through the compiler's vector extension. The target is built
// with -ffp-contract=fast, so the multiply-add becomes an FMA where the ISA has one.
float fma_loop_generic(int64_t iterations) {
  typedef float Vec4 __attribute__((vector_size(16)));
  constexpr int kAcc = 12;
  const float s = g_scale, t = g_step;
  const Vec4 scale = {s, s, s, s};
  const Vec4 step = {t, t, t, t};
  Vec4 acc[kAcc];
  for (int j = 0; j < kAcc; ++j) {
    const float v = static_cast<float>(j);
    acc[j] = Vec4{v, v, v, v};
  }
  for (int64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < kAcc; ++j) acc[j] = acc[j] * scale + step;
  }
  float total = 0.0f;
  for (int j = 0; j < kAcc; ++j) total += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
  return total;
}

const Kernel kGeneric{"generic", 4, 12, fma_loop_generic};

// The kernel for `isa` ("auto": the widest the CPU runs), or nullptr if the CPU lacks it.
const Kernel *select_kernel(std::string_view isa) {
#ifdef LUMEN_PEAK_X86
  static const Kernel avx512{"avx512f", 16, 16, fma_loop_avx512};
  static const Kernel avx2{"avx2+fma", 8, 12, fma_loop_avx2};
  __builtin_cpu_init();
  const bool has_avx512 = __builtin_cpu_supports("avx512f");
  const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == "avx512") return has_avx512 ? &avx512 : nullptr;
  if (isa == "avx2") return has_avx2 ? &avx2 : nullptr;
  if (isa == "auto") return has_avx512 ? &avx512 : has_avx2 ? &avx2 : &kGeneric;
#else
  if (isa == "auto") return &kGeneric;
#endif
  if (isa == "generic") return &kGeneric;
  return nullptr;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Wall time for `threads` threads to each run `iterations` iterations, started together.
double timed_run(const Kernel &kernel, int threads, int64_t iterations) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      g_sink = kernel.run(iterations);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread &w : workers) w.join();
  return seconds_since(start);
}

struct Result {
  int threads;
  double gflops;
  double seconds;  // of the best trial
};

Result measure(const Kernel &kernel, int threads, double seconds, int trials) {
  // Calibrate on one thread until a run is long enough to time, then size the trials.
  int64_t iterations = 1 << 16;
  double elapsed = timed_run(kernel, 1, iterations);
  while (elapsed < 0.02) {
    iterations *= 2;
    elapsed = timed_run(kernel, 1, iterations);
  }
  iterations = std::max<int64_t>(1, static_cast<int64_t>(iterations * seconds / elapsed));
  Result best{threads, 0.0, 0.0};
  for (int trial = 0; trial < trials; ++trial) {
    const double t = timed_run(kernel, threads, iterations);
    const double gflops = kernel.flops_per_iteration() * iterations * threads / t * 1e-9;
    if (gflops > best.gflops) best = Result{threads, gflops, t};
  }
  return best;
}

bool parse_int(std::string_view text, int &out) {
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && out > 0;
}

bool parse_thread_list(std::string_view text, std::vector<int> &out) {
  out.clear();
  while (!text.empty()) {
    const size_t comma = text.find(',');
    int n = 0;
    if (!parse_int(text.substr(0, comma), n)) return false;
    out.push_back(n);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return !out.empty();
}

int usage(const char *message) {
  std::fprintf(stderr,
               "lumen_peak_flops: %s\n"
               "usage: lumen_peak_flops [--threads 1,2] [--isa auto|avx512|avx2|generic] "
               "[--seconds S] [--trials N]\n"
               "  --threads  comma-separated thread counts (default: 1 and all cores)\n"
               "  --seconds  length of one trial (default 0.2)\n"
               "  --trials   trials per thread count; the best is reported (default 5)\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> thread_counts = {1};
  if (cores > 1) thread_counts.push_back(cores);
  std::string isa = "auto";
  double seconds = 0.2;
  int trials = 5;

  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage("measures the FP32 FMA peak in GFLOP/s");
      return 0;
    }
    if (i + 1 >= argc) return usage("missing value after an option");
    const std::string_view value = argv[++i];
    if (arg == "--threads") {
      if (!parse_thread_list(value, thread_counts)) return usage("bad --threads list");
    } else if (arg == "--isa") {
      isa = value;
      if (isa != "auto" && isa != "avx512" && isa != "avx2" && isa != "generic")
        return usage("--isa must be auto, avx512, avx2 or generic");
    } else if (arg == "--seconds") {
      seconds = std::atof(std::string(value).c_str());
      if (!(seconds > 0.0)) return usage("--seconds must be positive");
    } else if (arg == "--trials") {
      if (!parse_int(value, trials)) return usage("--trials must be a positive integer");
    } else {
      return usage("unknown option");
    }
  }

  const Kernel *kernel = select_kernel(isa);
  if (kernel == nullptr) {
    std::fprintf(stderr, "lumen_peak_flops: this CPU cannot run --isa %s\n", isa.c_str());
    return 1;
  }
  std::printf("{\"isa\": \"%s\", \"vector_floats\": %d, \"accumulators\": %d, \"results\": [",
              kernel->isa, kernel->vector_floats, kernel->accumulators);
  for (size_t i = 0; i < thread_counts.size(); ++i) {
    const Result r = measure(*kernel, thread_counts[i], seconds, trials);
    std::printf("%s{\"threads\": %d, \"gflops\": %.1f, \"seconds\": %.3f}", i ? ", " : "",
                r.threads, r.gflops, r.seconds);
    std::fflush(stdout);
  }
  std::printf("]}\n");
  return 0;
}
