// CompileOptions::adaptive: routing that corrects itself between runs. The second and third runs
// of a plan are timed step by step (the first pays one-time costs: pipelines, first touch); the
// timings go to the router's cost model (compile/cost_model.h), and where a step that matters
// (10% of the run or more) took over twice or under half its estimate, the graph is placed and
// planned again and later runs use the new plan. At most kMaxReplans times per executable, and
// never again once a replan changes nothing, so an adaptive executable settles; runs after that
// are untimed.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "compile/prepared_cache.h"
#include "lumen/graph.h"
#include "runtime/executable_impl.h"

namespace lumen {

class AdaptivePlan {
 public:
  static constexpr int kMaxReplans = 3;

  AdaptivePlan(Graph graph, Runtime &runtime, CompileOptions options,
               std::shared_ptr<PreparedCache> prepared);

  // The plan for the next run (`first` until a replan), and whether to time that run.
  std::pair<const Executable::Impl *, bool> next(const Executable::Impl &first);
  // The plan runs use now.
  const Executable::Impl &current(const Executable::Impl &first) const;
  // After a timed run of `plan`: replans when its steps disagree with their estimates.
  void observe(const Executable::Impl &plan, const RunProfile &profile);
  // One line per replan: which steps were off, and what changed.
  std::vector<std::string> history() const;

 private:
  mutable std::mutex mutex_;
  Graph graph_;
  Runtime &runtime_;
  CompileOptions options_;
  std::shared_ptr<PreparedCache> prepared_;
  // Every replanned plan, kept for the executable's life: runs in flight and the StepInfo that
  // steps() handed out may still point into them (at most kMaxReplans).
  std::vector<std::unique_ptr<Executable::Impl>> plans_;
  int runs_ = 0;          // started on the current plan
  bool settled_ = false;  // no more timing or replanning
  std::vector<std::string> history_;
};

}  // namespace lumen
