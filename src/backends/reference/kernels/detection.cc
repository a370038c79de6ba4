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
#include "backends/common/determinant.h"
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

LUMEN_REGISTER_KERNEL("reference", "det", determinant, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

}  // namespace
}  // namespace lumen
