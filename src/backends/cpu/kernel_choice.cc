#include "backends/cpu/kernel_choice.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "core/cache_files.h"
#include "core/cpu_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lumen::cpu {

// What the timings depend on besides the step and the build: the CPU model, the ISA the kernels
// use, the L2 size. Tabs and newlines are the file's separators.
std::string machine_id() {
  std::string model = "unknown-cpu";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 1);
      model.erase(0, model.find_first_not_of(' '));
      break;
    }
  long l2 = -1;
#if defined(_SC_LEVEL2_CACHE_SIZE)
  l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  const vec::Isa isa = vec::cpu_isa();
  std::ostringstream id;
  id << model << " / "
     << (isa == vec::Isa::Avx512 ? "avx512"
         : isa == vec::Isa::Avx2 ? "avx2"
                                 : "baseline")
     << " / L2 " << l2;
  std::string out = id.str();
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
  return out;
}

namespace {

// Rounds of alternating runs (each candidate once per round; the minimum counts): at least
// kMinRounds, more while the measurement is under kBudget, so small convs get many rounds and a
// large one stays a fraction of a second.
constexpr int kMinRounds = 2;
constexpr int kMaxRounds = 15;
constexpr auto kBudget = std::chrono::milliseconds(40);
constexpr double kKeepRuleMargin = 1.03;

// The choices made on this machine: "key \t threads" -> candidate name and its measurement.
class ChoiceCache {
 public:
  ChoiceCache()
      : path_(cache_file_path("kernel_choices.tsv")), machine_(machine_id() + " / " + build_id()) {
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> fields;
      std::istringstream parts(line);
      for (std::string f; std::getline(parts, f, '\t');) fields.push_back(f);
      if (fields.size() == 5 && fields[0] == machine_)
        choices_[fields[1] + '\t' + fields[2]] = {fields[3], fields[4]};
    }
  }

  struct Choice {
    std::string name, timings;  // "winograd", "winograd 120 us, gemm 150 us"
  };

  Choice find(const std::string &key) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = choices_.find(key);
    return it == choices_.end() ? Choice{} : it->second;
  }

  void add(const std::string &key, const Choice &choice) {
    std::lock_guard<std::mutex> lock(mutex_);
    choices_[key] = choice;
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ignored);
    // One write() of a whole line in append mode: lines from concurrent compilers do not mix.
    const std::string line =
        machine_ + '\t' + key + '\t' + choice.name + '\t' + choice.timings + '\n';
    const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
    ::close(fd);
  }

 private:
  std::mutex mutex_;
  std::string path_, machine_;
  std::map<std::string, Choice> choices_;
};

ChoiceCache &choice_cache() {
  static ChoiceCache cache;
  return cache;
}

std::string microseconds(double seconds) {
  std::ostringstream out;
  const double us = seconds * 1e6;
  out << std::fixed << std::setprecision(us < 100 ? 1 : 0) << us << " us";
  return out.str();
}

}  // namespace

void flush_from_caches(const void *data, size_t bytes) {
#if defined(__x86_64__)
  constexpr uintptr_t kLine = 64;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) & ~(kLine - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  for (uintptr_t line = begin; line < end; line += kLine)
    _mm_clflush(reinterpret_cast<const void *>(line));
  _mm_mfence();
#else
  (void)data, (void)bytes;
#endif
}

bool calibration_enabled() {
  const char *v = std::getenv("LUMEN_CALIBRATE");  // read per compile: cheap next to the timing
  return !(v && std::string(v) == "0");
}

size_t choose_algorithm(const std::string &key, const std::vector<AlgorithmCandidate> &candidates,
                        size_t rule, int threads, std::string &report) {
  if (candidates.size() == 1) {
    report = candidates[0].name + " (only algorithm)";
    return 0;
  }
  if (const char *forced = std::getenv("LUMEN_FORCE_ALGORITHM"); forced && *forced) {
    std::istringstream names(forced);
    for (std::string name; std::getline(names, name, ',');)
      for (size_t i = 0; i < candidates.size(); ++i)
        if (candidates[i].name == name) {
          report = name + " (forced by LUMEN_FORCE_ALGORITHM)";
          return i;
        }
  }
  const bool measurable = std::all_of(candidates.begin(), candidates.end(),
                                      [](const AlgorithmCandidate &c) { return bool(c.run); });
  if (!measurable || !calibration_enabled()) {
    report = candidates[rule].name + " (rule)";
    return rule;
  }
  const std::string cache_key = key + '\t' + std::to_string(threads);
  const ChoiceCache::Choice cached = choice_cache().find(cache_key);
  for (size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].name == cached.name) {
      report = cached.name + " (measured before: " + cached.timings + ')';
      return i;
    }
  using Clock = std::chrono::steady_clock;
  std::vector<double> best(candidates.size(), std::numeric_limits<double>::infinity());
  for (const AlgorithmCandidate &c : candidates) c.run();  // warm-up: caches, scratch buffers
  const auto start = Clock::now();
  for (int round = 0; round < kMaxRounds; ++round) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].before) candidates[i].before();
      const auto t0 = Clock::now();
      candidates[i].run();
      best[i] = std::min(best[i], std::chrono::duration<double>(Clock::now() - t0).count());
    }
    if (round + 1 >= kMinRounds && Clock::now() - start > kBudget) break;
  }
  size_t chosen = static_cast<size_t>(std::min_element(best.begin(), best.end()) - best.begin());
  if (best[rule] <= best[chosen] * kKeepRuleMargin) chosen = rule;
  std::string timings;
  for (size_t i = 0; i < candidates.size(); ++i)
    timings += (i ? ", " : "") + candidates[i].name + ' ' + microseconds(best[i]);
  if (chosen != rule) timings += "; the rule said " + candidates[rule].name;
  report = candidates[chosen].name + " (measured: " + timings + ')';
  choice_cache().add(cache_key, {candidates[chosen].name, timings});
  return chosen;
}

}  // namespace lumen::cpu
