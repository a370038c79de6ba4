// Shape arithmetic the device backends' kernels share: a shape split around an axis (softmax,
// normalizations), and where a transpose reads each output dim.
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/attributes.h"
#include "lumen/shape.h"

namespace lumen {

// The dims before `axis` (outer), at it (len) and after it (inner), as element counts.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
inline AxisSplit split_at(const Shape &s, size_t axis) {
  AxisSplit split;
  for (size_t d = 0; d < s.rank(); ++d)
    (d < axis ? split.outer : d == axis ? split.len : split.inner) *= s[d];
  return split;
}

// Per output dim of Transpose, the element stride it reads in the contiguous input ("perm",
// default: the dims reversed).
inline std::vector<int64_t> transpose_read_strides(const Shape &in, const Attributes &attrs) {
  const size_t rank = in.rank();
  std::vector<int64_t> perm = attrs.get_ints("perm", {});
  if (perm.empty())
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  const std::vector<int64_t> own = contiguous_strides(in);
  std::vector<int64_t> read(rank);
  for (size_t d = 0; d < rank; ++d) read[d] = own[static_cast<size_t>(perm[d])];
  return read;
}

}  // namespace lumen
