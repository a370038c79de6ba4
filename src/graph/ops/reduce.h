// The axis and label semantics of the reductions and of einsum (defined in reduce.cc), shared by
// their shape inference and every backend's kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lumen/shape.h"

namespace lumen::reduce_detail {

// Which dims of a rank-`rank` input a reduction reduces: `axes` (possibly negative), all dims when
// `axes` is empty unless `noop_with_empty_axes`. Throws lumen::Error on a bad or repeated axis.
std::vector<bool> reduce_mask(const std::vector<int64_t> &axes, size_t rank,
                              bool noop_with_empty_axes);

// Parses an einsum equation for inputs of the given shapes. Labels: 'a'-'z' are 0-25, 'A'-'Z'
// are 26-51, the dims an ellipsis stands for are 52.. (right-aligned across inputs, so they
// broadcast as NumPy does). Fills each input's label per dim, the output's labels and every
// label's extent. Throws lumen::Error on a malformed equation or mismatched dims.
void parse_einsum(const std::string &equation, const std::vector<Shape> &shapes,
                  std::vector<std::vector<int>> &in_labels, std::vector<int> &out_labels,
                  std::vector<int64_t> &label_dims);

}  // namespace lumen::reduce_detail
