// How much work a node is, for the router's cost estimates (compile/cost_model.h): floating-point
// operations and bytes moved. Op semantics, so it lives with the ops; estimates, not counts: a
// conv's flops assume its weight input is in ONNX layout, and anything without a formula here
// counts one operation per output element. Unknown dims count as 1 (a dynamic graph's plans are
// placed again with the real shapes).
#pragma once

#include <string_view>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {

struct OpWork {
  double flops = 0;
  double bytes = 0;  // every input read once and every output written once
};

// `inputs`: nullptr for omitted optional inputs.
OpWork estimate_work(std::string_view op, const Attributes &attrs,
                     const std::vector<const TensorType *> &inputs,
                     const std::vector<TensorType> &outputs);

// The elements of `shape`, unknown dims counted as 1.
double estimated_numel(const Shape &shape);

}  // namespace lumen
