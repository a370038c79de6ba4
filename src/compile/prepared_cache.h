// Prepared data (packed weights) shared by the plans compiled from one graph. A graph whose shapes
// are known only at run time gets a plan per input-shape signature; without sharing, each plan
// would pack every weight again and hold its own copy.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/kernel.h"

namespace lumen {

class PreparedCache {
 public:
  // What `prepare` builds for this step: the result of an earlier call with the same backend, op,
  // dtype, attributes and constant inputs (the same tensors) when that result was not
  // shape-specific (PrepareContext::shape_specific) and a plan still holds it, else a new call.
  // The cache holds results weakly: they live as long as the plans that use them. Thread-safe.
  std::shared_ptr<const void> get(PrepareFn prepare, const PrepareContext &ctx,
                                  std::string_view backend, DType dtype);

 private:
  struct Entry {
    Attributes attrs;
    std::vector<Tensor> constants;  // kept alive, so no other tensor takes their addresses
    std::weak_ptr<const void> prepared;
    std::string algorithm;  // PrepareContext::algorithm as the prepare function left it
  };
  std::mutex mutex_;
  std::map<std::string, std::vector<Entry>> entries_;
};

}  // namespace lumen
