#include "runtime/shape_plan_cache.h"

#include <algorithm>

#include "compile/compiler.h"
#include "lumen/ops.h"

namespace lumen {

ShapePlanCache::ShapePlanCache(Graph graph, Runtime &runtime, CompileOptions options,
                               std::shared_ptr<PreparedCache> prepared)
    : graph_(std::move(graph)),
      runtime_(runtime),
      options_(options),
      prepared_(std::move(prepared)) {}

std::shared_ptr<const Executable::Impl> ShapePlanCache::plan_for(
    const std::vector<Tensor> &inputs) {
  std::vector<Shape> signature;
  signature.reserve(inputs.size());
  for (const Tensor &t : inputs) signature.push_back(t.shape());
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(plans_.begin(), plans_.end(),
                         [&](const Plan &p) { return p.signature == signature; });
  if (it != plans_.end()) {
    plans_.splice(plans_.begin(), plans_, it);
    return plans_.front().impl;
  }
  auto seen = std::find(seen_once_.begin(), seen_once_.end(), signature);
  if (seen == seen_once_.end()) {
    seen_once_.push_front(std::move(signature));
    if (seen_once_.size() > 4 * options_.shape_cache_capacity) seen_once_.pop_back();
    return nullptr;
  }
  seen_once_.erase(seen);
  std::shared_ptr<const Executable::Impl> impl = specialize(signature);
  plans_.push_front({std::move(signature), impl});
  if (plans_.size() > options_.shape_cache_capacity) plans_.pop_back();
  return impl;
}

std::unique_ptr<Executable::Impl> ShapePlanCache::specialize(
    const std::vector<Shape> &signature) const {
  Graph graph = graph_.clone();
  for (size_t i = 0; i < signature.size(); ++i)
    graph.set_input_shape(graph.inputs()[i], signature[i]);
  // As the first compile was optimized (Python's compile): no pass may make an op the pinned
  // backend has no kernel for.
  graph.optimize(options_.opt_level,
                 OptimizeOptions{.dump_from_env = false,
                                 .target_supports = ops_supported_by(runtime_.options().backend)});
  return compile_plan(graph, runtime_, options_, prepared_);
}

}  // namespace lumen
