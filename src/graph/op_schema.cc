#include "graph/op_schema.h"

#include "lumen/container.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace lumen {
namespace {

struct OpTable {
  std::mutex mutex;
  std::map<std::string, OpSchema, std::less<>> ops;
};

OpTable &table() {
  static auto *t = new OpTable;
  return *t;
}

}  // namespace

const TensorType &InferContext::input(size_t i) const {
  if (!has_input(i)) fail("input ", i, " is required but missing");
  return *inputs[i];
}

std::optional<std::vector<int64_t>> InferContext::int_values(size_t i) const {
  const Tensor *t = value(i);
  if (!t) return std::nullopt;
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  if (t->dtype() == DType::Int64) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data<int64_t>()[k];
  } else if (t->dtype() == DType::Int32) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data<int32_t>()[k];
  } else {
    fail("input ", i, " must be int32 or int64, got ", dtype_name(t->dtype()));
  }
  return out;
}

void register_op(OpSchema schema) {
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::string name = schema.name;
  if (!t.ops.emplace(name, std::move(schema)).second) fail("op '", name, "' registered twice");
}

const OpSchema *find_op(std::string_view name) {
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.ops.find(name);
  return it == t.ops.end() ? nullptr : &it->second;
}

const OpSchema &get_op(std::string_view name) {
  if (const OpSchema *schema = find_op(name)) return *schema;
  std::string known;
  for (const auto &op : registered_ops()) known += (known.empty() ? "" : ", ") + op;
  fail("unknown op '", name, "' (known ops: ", known, ")");
}

std::vector<std::string> registered_ops() {
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<std::string> out;
  for (const auto &entry : t.ops) out.push_back(entry.first);
  return out;
}

void check_arity(const OpSchema &schema, const InferContext &ctx) {
  const auto n = static_cast<int>(ctx.inputs.size());
  if (n < schema.min_inputs || n > schema.max_inputs) {
    if (schema.min_inputs == schema.max_inputs)
      ctx.fail("expected ", schema.min_inputs, " inputs, got ", n);
    ctx.fail("expected ", schema.min_inputs, " to ", schema.max_inputs, " inputs, got ", n);
  }
  for (int i = 0; i < schema.min_inputs; ++i)
    if (!ctx.inputs[i]) ctx.fail("required input ", i, " is missing");
}

std::vector<TensorType> infer_types(const OpSchema &schema, const InferContext &ctx) {
  check_arity(schema, ctx);
  if (!schema.takes_containers)
    for (size_t i = 0; i < ctx.inputs.size(); ++i)
      if (ctx.inputs[i] && is_container(ctx.inputs[i]->dtype))
        ctx.fail("input ", i, " is a ", type_name(ctx.inputs[i]->dtype, ctx.inputs[i]->element),
                 "; this op takes tensors");
  std::vector<TensorType> out = schema.infer(ctx);
  if (schema.num_outputs != kVariadicOutputs && static_cast<int>(out.size()) != schema.num_outputs)
    ctx.fail("inference produced ", out.size(), " outputs, schema says ", schema.num_outputs);
  return out;
}

std::optional<Shape> broadcast_shapes(const Shape &a, const Shape &b) {
  const size_t rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.rank() ? 1 : a[i - (rank - a.rank())];
    const int64_t db = i < rank - b.rank() ? 1 : b[i - (rank - b.rank())];
    if (da == db || db == 1)
      dims[i] = da;
    else if (da == 1)
      dims[i] = db;
    // An unknown dim against a known n > 1 must be n (checked again at run time).
    else if (da == kUnknownDim)
      dims[i] = db;
    else if (db == kUnknownDim)
      dims[i] = da;
    else
      return std::nullopt;
  }
  return Shape(std::move(dims));
}

std::string ints_to_string(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t mul_or_fail(const InferContext &ctx, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) ctx.fail("element count overflows int64");
  return r;
}

int64_t mul_dims(const InferContext &ctx, int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a == kUnknownDim || b == kUnknownDim) return kUnknownDim;
  return mul_or_fail(ctx, a, b);
}

std::vector<int64_t> ints_attr(const InferContext &ctx, const char *name,
                               const std::vector<int64_t> &fallback, int64_t min_value) {
  std::vector<int64_t> v = ctx.attrs.get_ints(name, fallback);
  if (v.size() != fallback.size())
    ctx.fail("attribute '", name, "' must have ", fallback.size(), " values, got ", v.size());
  for (int64_t x : v)
    if (x < min_value)
      ctx.fail("attribute '", name, "' values must be >= ", min_value, ", got ", x);
  return v;
}

}  // namespace lumen
