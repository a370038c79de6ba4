#include "runtime/adaptive_plan.h"

#include <algorithm>
#include <cstdio>

#include "compile/compiler.h"

namespace lumen {
namespace {

constexpr int kTimedRuns = 2;        // runs 2 and 3 of each plan
constexpr double kOffBy = 2.0;       // measured over 2x or under 1/2x the estimate
constexpr double kMatters = 0.1;     // ... on a step taking 10% of the run, estimated or measured
constexpr double kMinimumUs = 20.0;  // and at least 20 us: timer noise is not a disagreement

std::string us(double v) {
  char text[32];
  std::snprintf(text, sizeof text, v >= 1000 ? "%.2f ms" : "%.1f us", v >= 1000 ? v / 1000 : v);
  return text;
}

// "node on backend: 1.20 ms measured, 0.31 ms estimated" for each step of the run off its
// estimate; empty when all agree.
std::vector<std::string> disagreements(const RunProfile &profile) {
  double total = 0;
  for (const StepTiming &t : profile.steps) total += t.duration_us;
  std::vector<std::string> off;
  for (const StepTiming &t : profile.steps) {
    if (t.step >= profile.plan_steps.size()) continue;
    const StepInfo &info = profile.plan_steps[t.step];
    for (const auto &[backend, estimate] : info.estimates_us) {
      if (backend != info.backend) continue;
      const double got = t.duration_us, larger = std::max(got, estimate);
      if (larger < kMatters * total || larger < kMinimumUs) continue;
      if (got > kOffBy * estimate || got * kOffBy < estimate)
        off.push_back(str(info.node, " on ", backend, ": ", us(got), " measured, ", us(estimate),
                          " estimated"));
    }
  }
  return off;
}

// The steps whose backend differs between two plans.
size_t moved_steps(const Executable::Impl &a, const Executable::Impl &b) {
  if (a.step_info.size() != b.step_info.size())
    return std::max(a.step_info.size(), b.step_info.size());
  size_t moved = 0;
  for (size_t i = 0; i < a.step_info.size(); ++i)
    moved += a.step_info[i].backend != b.step_info[i].backend;
  return moved;
}

}  // namespace

AdaptivePlan::AdaptivePlan(Graph graph, Runtime &runtime, CompileOptions options,
                           std::shared_ptr<PreparedCache> prepared)
    : graph_(std::move(graph)),
      runtime_(runtime),
      options_(std::move(options)),
      prepared_(std::move(prepared)) {
  options_.adaptive = false;  // the replans themselves are plain plans
}

const Executable::Impl &AdaptivePlan::current(const Executable::Impl &first) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plans_.empty() ? first : *plans_.back();
}

std::pair<const Executable::Impl *, bool> AdaptivePlan::next(const Executable::Impl &first) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Executable::Impl *plan = plans_.empty() ? &first : plans_.back().get();
  const int run = runs_++;
  return {plan, !settled_ && run >= 1 && run <= kTimedRuns};
}

void AdaptivePlan::observe(const Executable::Impl &plan, const RunProfile &profile) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool is_current = plans_.empty() ? true : &plan == plans_.back().get();
  if (settled_ || !is_current) return;
  const std::vector<std::string> off = disagreements(profile);
  if (off.empty()) {
    if (runs_ > kTimedRuns) settled_ = true;
    return;
  }
  if (static_cast<int>(history_.size()) == kMaxReplans) {
    settled_ = true;
    return;
  }
  // The run's timings are in the cost model already (Executable::Impl::run): placing again
  // weighs them.
  std::unique_ptr<Executable::Impl> replanned =
      compile_graph(graph_, runtime_, options_, prepared_);
  const size_t moved = moved_steps(plan, *replanned);
  std::string line =
      str("replan ", history_.size() + 1, ": ", off.size(), " step", off.size() == 1 ? "" : "s",
          " off the estimates (", off[0], off.size() > 1 ? ", ..." : "", "); ");
  if (moved == 0) {
    history_.push_back(line + "the placement stays");
    settled_ = true;
    return;
  }
  history_.push_back(line + str(moved, " step", moved == 1 ? "" : "s", " moved"));
  plans_.push_back(std::move(replanned));
  runs_ = 0;
}

std::vector<std::string> AdaptivePlan::history() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_;
}

}  // namespace lumen
