// Cutting host tensors into pieces along an axis and joining them again, for the executor's
// builtin steps (scan slices, sequence splits and concatenations). Any dtype, strings included.
#pragma once

#include <vector>

#include "lumen/tensor.h"

namespace lumen {

// [start, start + length) along `axis`, as a contiguous copy (the axis kept).
Tensor slice_along(const Tensor &x, size_t axis, int64_t start, int64_t length);
// The parts joined along `axis`; they must agree in dtype, rank and every other dim (else a
// lumen::Error prefixed with `what`). At least one part.
Tensor concat_along(const std::vector<Tensor> &parts, size_t axis, const std::string &what);
// x with a dim of size 1 inserted at `axis` (0..rank), or the size-1 dim at `axis` removed.
Tensor unsqueeze_at(const Tensor &x, size_t axis);
Tensor squeeze_at(const Tensor &x, size_t axis);

}  // namespace lumen
