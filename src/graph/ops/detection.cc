// non_max_suppression (ONNX NonMaxSuppression 10/11): greedy per-class box selection.
//   inputs: boxes [B, S, 4], scores [B, C, S] (float), max_output_boxes_per_class (int64 scalar
//     or [1], optional, default 0), iou_threshold (float, optional, default 0), score_threshold
//     (float, optional: no threshold when omitted).
//   attrs: center_point_box 0 ([y1, x1, y2, x2] corners) | 1 ([x_center, y_center, w, h]).
//   output: selected_indices [num_selected, 3] int64 rows (batch, class, box): the row count is
//     only known once every input is, so inference runs the selection then.
#include <array>
#include <vector>

#include "graph/op_schema.h"
#include "graph/ops/nms_selection.h"

namespace lumen {
namespace {

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

std::vector<TensorType> infer_nms(const InferContext &ctx) {
  const TensorType &boxes = ctx.input(0), &scores = ctx.input(1);
  if (!is_float(boxes.dtype) || !is_float(scores.dtype))
    ctx.fail("boxes and scores must be floating point, got ", dtype_name(boxes.dtype), " and ",
             dtype_name(scores.dtype));
  const int64_t center = ctx.attrs.get_int("center_point_box", 0);
  if (center != 0 && center != 1) ctx.fail("center_point_box must be 0 or 1, got ", center);
  if (boxes.shape.rank() != 3 || (boxes.shape[2] != kUnknownDim && boxes.shape[2] != 4))
    ctx.fail("boxes must have shape [B, S, 4], got ", boxes.shape.to_string());
  if (scores.shape.rank() != 3)
    ctx.fail("scores must have shape [B, C, S], got ", scores.shape.to_string());
  auto differ = [](int64_t a, int64_t b) { return a != kUnknownDim && b != kUnknownDim && a != b; };
  if (differ(boxes.shape[0], scores.shape[0]) || differ(boxes.shape[1], scores.shape[2]))
    ctx.fail("boxes ", boxes.shape.to_string(), " and scores ", scores.shape.to_string(),
             " do not match");
  for (size_t i = 2; i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    const TensorType &t = ctx.input(i);
    if (t.shape.numel() > 1 && t.shape.rank() > 0 && t.shape.dims()[0] != kUnknownDim)
      ctx.fail("input ", i, " must be a scalar or a single value, got ", t.shape.to_string());
    if (i == 2 && t.dtype != DType::Int64 && t.dtype != DType::Int32)
      ctx.fail("max_output_boxes_per_class must be int64, got ", dtype_name(t.dtype));
    if (i > 2 && !is_float(t.dtype))
      ctx.fail("input ", i, " must be floating point, got ", dtype_name(t.dtype));
  }
  std::vector<const Tensor *> values;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      values.push_back(nullptr);
      continue;
    }
    if (!ctx.value(i)) ctx.defer({DType::Int64});
    values.push_back(ctx.value(i));
  }
  const auto sel = nms_select(values, center != 0);
  return {{DType::Int64, Shape{int64_t(sel.size()), 3}}};
}

LUMEN_REGISTER_OP({.name = "non_max_suppression",
                   .min_inputs = 2,
                   .max_inputs = 5,
                   .infer = infer_nms,
                   .kernel_sizes_outputs = true});

// det (ONNX Det 11/22): determinants of the square matrices in the last two dims.
//   input: x [..., M, M] (float). output: [...], x's dtype.
std::vector<TensorType> infer_det(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  const size_t rank = x.shape.rank();
  if (rank < 2) ctx.fail("input must have rank >= 2, got ", x.shape.to_string());
  if (x.shape[rank - 1] != kUnknownDim && x.shape[rank - 2] != kUnknownDim &&
      x.shape[rank - 1] != x.shape[rank - 2])
    ctx.fail("input matrices must be square, got ", x.shape.to_string());
  std::vector<int64_t> out(x.shape.dims().begin(), x.shape.dims().end() - 2);
  return {{x.dtype, Shape(out)}};
}

LUMEN_REGISTER_OP({.name = "det", .infer = infer_det});

}  // namespace
}  // namespace lumen
