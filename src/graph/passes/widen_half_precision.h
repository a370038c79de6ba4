// Runs float16 and bfloat16 nodes in float32 where only a slower backend has the narrow kernel:
// the node's narrow inputs are cast to float32 (constants converted once, here), the node runs on
// float32 values, and each narrow output is rounded back by a cast. This is how a half-precision
// model's convs, matmuls and norms reach the fast float32 kernels instead of a plain-loop backend
// (or none). A chain of widened nodes passes float32 values from one to the next, rounding only
// where the chain ends: like onnxruntime's CPU provider, the model then computes in float32,
// more accurately than rounding after every op would.
#pragma once

#include <functional>

#include "lumen/graph.h"

namespace lumen {

inline bool is_half_precision(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16;
}

// Widens every node whose floating values are all of one half-precision type, with no attribute
// naming a dtype, where `slower_half(node)` (the caller's placement runs the node's
// half-precision kernel on a slower backend than its float32 one), or where `float32_as_fast(node)`
// and an input is already available in float32 (a widened node's output: a reshape or transpose
// between two widened nodes keeps the chain in float32). Returns whether the graph changed.
bool widen_half_precision(Graph &graph, const std::function<bool(const Node &)> &slower_half,
                          const std::function<bool(const Node &)> &float32_as_fast);

}  // namespace lumen
