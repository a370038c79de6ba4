// An Einsum kernel's view of its equation: each input's label per dim, the output's labels and
// every label's extent (parsed by src/graph/ops/reduce.cc, which also defines the semantics).
#pragma once

#include <string>
#include <vector>

#include "core/kernel.h"
#include "graph/ops/reduce.h"

namespace lumen {
struct EinsumLabels {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::vector<int64_t> dims;  // by label
};

// The labels of ctx's equation over its inputs, which must all be present and of one dtype.
inline EinsumLabels einsum_labels(const KernelContext &ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i) || ctx.input(i).dtype() != ctx.input(0).dtype())
      ctx.fail("input ", i, " is missing or has a different dtype");
    shapes.push_back(ctx.input(i).shape());
  }
  EinsumLabels labels;
  try {
    reduce_detail::parse_einsum(ctx.attrs.get_string("equation", ""), shapes, labels.inputs,
                                labels.output, labels.dims);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  return labels;
}

}  // namespace lumen
