// cast(x) with attribute `to` (a dtype name such as "float16"): element-wise conversion to any
// lumen dtype. Floats convert to integers by truncation (NaN -> 0, out of range saturates), to
// bool by `!= 0`; Float16/BFloat16 results round to nearest, ties to even.
#include "graph/op_schema.h"

namespace lumen {
namespace {

std::vector<TensorType> infer_cast(const InferContext &ctx) {
  const std::string to = ctx.attrs.get_string("to", "");
  if (to.empty()) ctx.fail("missing attribute 'to'");
  return {TensorType{dtype_from_name(to), ctx.input(0).shape}};
}

LUMEN_REGISTER_OP({.name = "cast", .infer = infer_cast});

}  // namespace
}  // namespace lumen
