// Semantics of the indexing ops (defined in indexing.cc) that shape inference and the kernels
// share.
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/tensor.h"

namespace lumen::indexing_detail {

// ONNX Unique over the slices of x along `axis` (every element when axis < 0): `first` gets the
// index of each unique slice's first occurrence (in sorted order, or order of appearance),
// `inverse` the unique index of every slice, `counts` how often each occurs.
void unique_slices(const Tensor &x, int64_t axis, bool sorted, std::vector<int64_t> &first,
                   std::vector<int64_t> &inverse, std::vector<int64_t> &counts);

}  // namespace lumen::indexing_detail
