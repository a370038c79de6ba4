// softmax and log_softmax along one axis (attr axis, default -1). A rank-0 input is treated as a
// single element along axis 0 or -1 (softmax gives 1, log_softmax 0).
#include "graph/op_schema.h"

namespace lumen {
namespace {

std::vector<TensorType> infer_softmax(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!is_floating(x.dtype)) ctx.fail("expected a floating-point input, got ", dtype_name(x.dtype));
  const int64_t axis = ctx.attrs.get_int("axis", -1);
  if (x.shape.rank() == 0) {
    if (axis != 0 && axis != -1) ctx.fail("axis ", axis, " is out of range for a rank-0 input");
  } else {
    const auto r = static_cast<int64_t>(x.shape.rank());
    if (axis < -r || axis >= r)
      ctx.fail("axis ", axis, " is out of range for rank ", r, " (shape ", x.shape.to_string(),
               ")");
  }
  return {x};
}

LUMEN_REGISTER_OP({.name = "softmax", .infer = infer_softmax});
LUMEN_REGISTER_OP({.name = "log_softmax", .infer = infer_softmax});

}  // namespace
}  // namespace lumen
