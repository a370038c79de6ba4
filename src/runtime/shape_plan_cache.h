// Plans per input-shape signature for a graph whose input dims are known only at run time. The
// second run at a signature specializes a copy of the graph to those shapes (shape arithmetic
// folds, reshapes become static, fusions that needed shapes apply), compiles it with a memory plan
// and packed weights, and keeps it; later runs at that signature run it at fixed-shape speed. The
// first run at a signature takes the generic plan (shapes inferred step by step): making a plan
// costs a re-optimization (~0.2 s for a small BERT), which a stream of ever-new shapes would pay on
// every call. At most `capacity` plans are kept, the least recently used evicted first; packed
// weights that do not depend on shapes are shared by all of them through one PreparedCache.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "compile/prepared_cache.h"
#include "runtime/executable_impl.h"

namespace lumen {

class ShapePlanCache {
 public:
  // `graph`: the optimized graph as compiled (its inputs have unknown dims). `runtime` owns the
  // Executable this cache belongs to, so it outlives it.
  ShapePlanCache(Graph graph, Runtime &runtime, CompileOptions options,
                 std::shared_ptr<PreparedCache> prepared);

  // The plan for these inputs' shapes (checked against the graph's inputs by the caller), made
  // under the cache's lock; nullptr the first time a signature is seen (run the generic plan).
  // Thread-safe; the plan stays valid while the caller holds it.
  std::shared_ptr<const Executable::Impl> plan_for(const std::vector<Tensor> &inputs);

 private:
  struct Plan {
    std::vector<Shape> signature;
    std::shared_ptr<const Executable::Impl> impl;
  };
  std::unique_ptr<Executable::Impl> specialize(const std::vector<Shape> &signature) const;

  const Graph graph_;
  Runtime &runtime_;
  const CompileOptions options_;
  std::shared_ptr<PreparedCache> prepared_;
  std::mutex mutex_;
  std::list<Plan> plans_;                    // most recently used first
  std::list<std::vector<Shape>> seen_once_;  // signatures met once, newest first (bounded)
};

}  // namespace lumen
