// Rows (all dims but the last) of a tensor c broadcast over the rows of x, numpy style: c's
// leading dims are 1 or x's, aligned at the right. Row r of x (row-major over x's leading dims)
// reads row (*this)(r) of c. Shared by the kernels of ops whose side inputs broadcast by row.
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/shape.h"

namespace lumen {

class BroadcastRows {
 public:
  BroadcastRows(const Shape &x, const Shape &c) {
    const size_t lead = x.rank() - 1, c_lead = c.rank() - 1;
    dims_.assign(x.dims().begin(), x.dims().begin() + static_cast<std::ptrdiff_t>(lead));
    strides_.assign(lead, 0);
    int64_t stride = 1;
    for (size_t i = 0; i < c_lead; ++i) {  // from the innermost leading dim outward
      const size_t xi = lead - 1 - i, ci = c_lead - 1 - i;
      if (c[ci] != 1) strides_[xi] = stride;
      stride *= c[ci];
    }
  }
  int64_t operator()(int64_t row) const {
    int64_t out = 0;
    for (size_t i = dims_.size(); i-- > 0;) {
      out += (row % dims_[i]) * strides_[i];
      row /= dims_[i];
    }
    return out;
  }

 private:
  std::vector<int64_t> dims_, strides_;
};

}  // namespace lumen
