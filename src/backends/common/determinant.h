// The det op's kernel, shared by the reference and CPU backends: LU decomposition with partial
// pivoting of each matrix, in double (det is rare and its matrices small).
#pragma once

#include <cmath>
#include <vector>

#include "backends/common/f64_io.h"
#include "core/kernel.h"
#include "core/scalar.h"

namespace lumen {

// det: LU decomposition with partial pivoting per matrix, in double.
inline void determinant(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const int64_t m = x.shape()[x.rank() - 1];
  const std::vector<double> xv = scalar::values_as_double(x);
  std::vector<double> out(static_cast<size_t>(y.numel()));
  std::vector<double> a(size_t(m * m));
  for (size_t k = 0; k < out.size(); ++k) {
    std::copy(xv.begin() + int64_t(k) * m * m, xv.begin() + int64_t(k + 1) * m * m, a.begin());
    double d = 1;
    for (int64_t c = 0; c < m && d != 0; ++c) {
      int64_t piv = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::abs(a[size_t(r * m + c)]) > std::abs(a[size_t(piv * m + c)])) piv = r;
      if (a[size_t(piv * m + c)] == 0) {
        d = 0;
        break;
      }
      if (piv != c) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[size_t(c * m + j)], a[size_t(piv * m + j)]);
        d = -d;
      }
      const double p = a[size_t(c * m + c)];
      d *= p;
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[size_t(r * m + c)] / p;
        for (int64_t j = c; j < m; ++j) a[size_t(r * m + j)] -= f * a[size_t(c * m + j)];
      }
    }
    out[k] = d;
  }
  from_f64(ctx, y, out);
}

}  // namespace lumen
