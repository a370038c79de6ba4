// CPU non_max_suppression. The selection (score filter, descending score with the lower index
// first on ties, greedy IoU suppression per batch and class) is the op's meaning, which shape
// inference already runs to size the output; the kernel writes the rows it gives.
#include <array>
#include <vector>

#include "core/kernel.h"
#include "graph/ops/nms_selection.h"

namespace lumen {
namespace {

void non_max_suppression(KernelContext &ctx) {
  const auto rows = nms_select(ctx.inputs, ctx.attrs.get_int("center_point_box", 0) != 0);
  Tensor &y = ctx.output(0);
  if (!y.defined()) y = Tensor::empty({int64_t(rows.size()), 3}, DType::Int64);  // sized here
  if (y.numel() != int64_t(rows.size()) * 3)
    ctx.fail("output holds ", y.numel(), " values, the selection has ", rows.size(), " rows");
  int64_t *p = y.data<int64_t>();
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t k = 0; k < 3; ++k) p[i * 3 + k] = rows[i][k];
}

LUMEN_REGISTER_KERNEL("cpu", "non_max_suppression", non_max_suppression, DType::Float32,
                      DType::Float64);

}  // namespace
}  // namespace lumen
