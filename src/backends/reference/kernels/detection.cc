// Reference non_max_suppression: per batch and class, the boxes whose score is above
// score_threshold (all boxes when it is omitted) in descending score order (ties: lower index
// first), each kept unless its IoU with an already kept box of that class exceeds iou_threshold,
// at most max_output_boxes_per_class per class. The selection itself is shared with inference
// (the output's row count depends on it).
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "backends/common/binary_functors.h"
#include "core/kernel.h"
#include "core/scalar.h"
#include "graph/ops/nms_selection.h"

namespace lumen {

namespace {

void non_max_suppression(KernelContext &ctx) {
  const auto sel = nms_select(ctx.inputs, ctx.attrs.get_int("center_point_box", 0) != 0);
  Tensor &y = ctx.output(0);
  if (!y.defined()) y = Tensor::empty({int64_t(sel.size()), 3}, DType::Int64);  // sized here
  if (y.numel() != int64_t(sel.size()) * 3)
    ctx.fail("output holds ", y.numel(), " values, selection has ", sel.size(), " rows");
  int64_t *p = y.data<int64_t>();
  for (size_t i = 0; i < sel.size(); ++i)
    for (size_t k = 0; k < 3; ++k) p[i * 3 + k] = sel[i][k];
}

LUMEN_REGISTER_KERNEL("reference", "non_max_suppression", non_max_suppression, DType::Float32,
                      DType::Float64, DType::Float16, DType::BFloat16);

// det: LU decomposition with partial pivoting per matrix, in double.
void det(KernelContext &ctx) {
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
  const bool ok = bin::visit_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Float16> ||
                  std::is_same_v<T, BFloat16>) {
      T *p = y.data<T>();
      for (size_t i = 0; i < out.size(); ++i) p[i] = bin::store<T>(bin::Compute<T>(out[i]));
    }
  });
  if (!ok) ctx.fail("unsupported dtype ", dtype_name(y.dtype()));
}

LUMEN_REGISTER_KERNEL("reference", "det", det, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace
}  // namespace lumen
