// String ops (dtype string: one std::string per element).
//   string_concat(a, b)            element-wise a + b, NumPy broadcasting
//   string_split(x)                attrs delimiter ("" : whitespace runs), maxsplit (-1: none)
//                                  -> pieces x.shape + [most pieces] padded with "", counts int64
//   string_normalizer(x)           x [C] or [1, C]; attrs stopwords (a string tensor),
//                                  is_case_sensitive, case_change_action (LOWER/UPPER/NONE):
//                                  stopwords removed, then case changed; nothing left: [""]
//   regex_full_match(x)            attr pattern (RE2 syntax) -> bool
//   label_encoder(x)               attrs keys, values (1-D tensors), default (a scalar tensor):
//                                  each element's value, or the default
// Outputs whose sizes depend on the strings (split, normalizer) wait for their values.
#include "core/string_ops.h"
#include "graph/op_schema.h"

namespace lumen {
namespace {

const TensorType &string_input(const InferContext &ctx, size_t i) {
  const TensorType &t = ctx.input(i);
  if (t.dtype != DType::String) ctx.fail("input ", i, " must be string, got ", dtype_name(t.dtype));
  return t;
}

std::vector<TensorType> infer_concat(const InferContext &ctx) {
  const TensorType &a = string_input(ctx, 0), &b = string_input(ctx, 1);
  const std::optional<Shape> shape = broadcast_shapes(a.shape, b.shape);
  if (!shape)
    ctx.fail("shapes ", a.shape.to_string(), " and ", b.shape.to_string(),
             " cannot be broadcast together");
  return {{DType::String, *shape}};
}

std::vector<TensorType> infer_split(const InferContext &ctx) {
  const TensorType &x = string_input(ctx, 0);
  const Tensor *v = ctx.value(0);
  if (!v) ctx.defer({DType::String, DType::Int64});
  const std::string delimiter = ctx.attrs.get_string("delimiter", "");
  const int64_t maxsplit = ctx.attrs.get_int("maxsplit", -1);
  int64_t most = 0;
  const Tensor c = v->contiguous();
  for (int64_t i = 0; i < c.numel(); ++i)
    most = std::max<int64_t>(
        most,
        static_cast<int64_t>(strings::split(c.data<std::string>()[i], delimiter, maxsplit).size()));
  std::vector<int64_t> dims = x.shape.dims();
  dims.push_back(most);
  return {{DType::String, Shape(dims)}, {DType::Int64, x.shape}};
}

std::vector<std::string> stopwords(const InferContext &ctx) {
  const Tensor *t = ctx.attrs.get_tensor("stopwords");
  if (!t) return {};
  if (t->dtype() != DType::String) ctx.fail("attribute 'stopwords' must hold strings");
  const Tensor c = t->contiguous();
  return {c.data<std::string>(), c.data<std::string>() + c.numel()};
}

std::vector<TensorType> infer_normalizer(const InferContext &ctx) {
  const TensorType &x = string_input(ctx, 0);
  const Shape &s = x.shape;
  if (!(s.rank() == 1 || (s.rank() == 2 && s[0] == 1)))
    ctx.fail("input must be [C] or [1, C], got ", s.to_string());
  const std::string action = ctx.attrs.get_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.fail("case_change_action must be NONE, LOWER or UPPER, got '", action, "'");
  const std::vector<std::string> stops = stopwords(ctx);
  int64_t kept = s.numel();
  if (!stops.empty()) {
    const Tensor *v = ctx.value(0);
    if (!v) ctx.defer({DType::String});
    const bool case_sensitive = ctx.attrs.get_int("is_case_sensitive", 0) != 0;
    const Tensor c = v->contiguous();
    kept = 0;
    for (int64_t i = 0; i < c.numel(); ++i)
      kept += strings::is_stopword(c.data<std::string>()[i], stops, case_sensitive) ? 0 : 1;
  }
  kept = std::max<int64_t>(kept, 1);  // nothing left: one empty string
  return {{DType::String, s.rank() == 1 ? Shape{kept} : Shape{1, kept}}};
}

std::vector<TensorType> infer_regex(const InferContext &ctx) {
  const TensorType &x = string_input(ctx, 0);
  if (!ctx.attrs.has("pattern")) ctx.fail("attribute 'pattern' is required");
  return {{DType::Bool, x.shape}};
}

std::vector<TensorType> infer_label_encoder(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const Tensor *keys = ctx.attrs.get_tensor("keys");
  const Tensor *values = ctx.attrs.get_tensor("values");
  const Tensor *fallback = ctx.attrs.get_tensor("default");
  if (!keys || !values || !fallback)
    ctx.fail("attributes 'keys', 'values' and 'default' (tensors) are required");
  if (keys->rank() != 1 || values->rank() != 1 || keys->numel() != values->numel())
    ctx.fail("keys and values must be 1-D and of one length, got ", keys->shape().to_string(),
             " and ", values->shape().to_string());
  if (keys->dtype() != x.dtype)
    ctx.fail("keys are ", dtype_name(keys->dtype()), ", the input ", dtype_name(x.dtype));
  if (fallback->dtype() != values->dtype() || fallback->numel() != 1)
    ctx.fail("default must be one ", dtype_name(values->dtype()), ", got ", fallback->to_string());
  return {{values->dtype(), x.shape}};
}

LUMEN_REGISTER_OP(
    {.name = "string_concat", .min_inputs = 2, .max_inputs = 2, .infer = infer_concat});
LUMEN_REGISTER_OP({.name = "string_split", .num_outputs = 2, .infer = infer_split});
LUMEN_REGISTER_OP({.name = "string_normalizer", .infer = infer_normalizer});
LUMEN_REGISTER_OP({.name = "regex_full_match", .infer = infer_regex});
LUMEN_REGISTER_OP({.name = "label_encoder", .infer = infer_label_encoder});

}  // namespace
}  // namespace lumen
