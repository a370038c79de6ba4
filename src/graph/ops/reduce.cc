// Reductions and ops that scan along an axis: reduce_* (ONNX Reduce*), argmax/argmin, top_k,
// cumsum/cumprod, hardmax and einsum. Axes given as an input (ONNX ReduceSum from opset 13, the
// other reductions from 18) are read from the value when known; otherwise the output shape waits
// for run time. Attribute semantics follow ONNX.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/ops/reduce.h"

#include "graph/op_schema.h"

namespace lumen {

namespace reduce_detail {

std::vector<bool> reduce_mask(const std::vector<int64_t> &axes, size_t rank,
                              bool noop_with_empty_axes) {
  const auto r = static_cast<int64_t>(rank);
  std::vector<bool> mask(rank, axes.empty() && !noop_with_empty_axes);
  for (int64_t a : axes) {
    if (a < -r || a >= r) fail("axis ", a, " is out of range for rank ", rank);
    const auto k = static_cast<size_t>(a < 0 ? a + r : a);
    if (mask[k]) fail("axis ", a, " is repeated in the axes");
    mask[k] = true;
  }
  return mask;
}

void parse_einsum(const std::string &equation, const std::vector<Shape> &shapes,
                  std::vector<std::vector<int>> &in_labels, std::vector<int> &out_labels,
                  std::vector<int64_t> &label_dims) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  if (terms.size() != shapes.size())
    fail("einsum equation '", equation, "' has ", terms.size(), " input terms but there are ",
         shapes.size(), " inputs");
  auto label_of = [&](char c) -> int {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
    fail("einsum equation '", equation, "' has an invalid character '", std::string(1, c), "'");
  };
  // Letters and ellipsis position of each term.
  struct Term {
    std::vector<int> letters_before, letters_after;
    bool ellipsis = false;
  };
  auto split_term = [&](const std::string &t) {
    Term term;
    size_t i = 0;
    while (i < t.size()) {
      if (t[i] == '.') {
        if (term.ellipsis || t.compare(i, 3, "...") != 0)
          fail("einsum equation '", equation, "' has a malformed ellipsis in '", t, "'");
        term.ellipsis = true;
        i += 3;
        continue;
      }
      (term.ellipsis ? term.letters_after : term.letters_before).push_back(label_of(t[i]));
      ++i;
    }
    return term;
  };
  size_t ellipsis_rank = 0;
  std::vector<Term> parsed;
  for (size_t k = 0; k < terms.size(); ++k) {
    Term t = split_term(terms[k]);
    const size_t letters = t.letters_before.size() + t.letters_after.size();
    if (t.ellipsis ? letters > shapes[k].rank() : letters != shapes[k].rank())
      fail("einsum equation '", equation, "': term '", terms[k], "' does not match input ", k,
           " of shape ", shapes[k].to_string());
    if (t.ellipsis) ellipsis_rank = std::max(ellipsis_rank, shapes[k].rank() - letters);
    parsed.push_back(std::move(t));
  }
  label_dims.assign(52 + ellipsis_rank, -1);
  std::vector<int> counts(52 + ellipsis_rank, 0);
  in_labels.assign(shapes.size(), {});
  for (size_t k = 0; k < parsed.size(); ++k) {
    const Term &t = parsed[k];
    std::vector<int> &labels = in_labels[k];
    labels = t.letters_before;
    if (t.ellipsis) {
      const size_t e = shapes[k].rank() - t.letters_before.size() - t.letters_after.size();
      for (size_t j = 0; j < e; ++j) labels.push_back(static_cast<int>(52 + ellipsis_rank - e + j));
    }
    labels.insert(labels.end(), t.letters_after.begin(), t.letters_after.end());
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      const int64_t dim = shapes[k][d];
      ++counts[l];
      if (label_dims[l] < 0 || (l >= 52 && label_dims[l] == 1)) {
        label_dims[l] = dim;
      } else if (dim != label_dims[l] && !(l >= 52 && dim == 1)) {
        fail("einsum equation '", equation, "': dim ", d, " of input ", k, " (shape ",
             shapes[k].to_string(), ") has size ", dim, " but its label has size ", label_dims[l]);
      }
    }
  }
  out_labels.clear();
  if (arrow == std::string::npos) {
    for (size_t j = 0; j < ellipsis_rank; ++j) out_labels.push_back(static_cast<int>(52 + j));
    for (int l = 0; l < 52; ++l)
      if (counts[l] == 1) out_labels.push_back(l);
    return;
  }
  const Term out = split_term(eq.substr(arrow + 2));
  std::vector<int> seen(52 + ellipsis_rank, 0);
  out_labels = out.letters_before;
  if (out.ellipsis)
    for (size_t j = 0; j < ellipsis_rank; ++j) out_labels.push_back(static_cast<int>(52 + j));
  out_labels.insert(out_labels.end(), out.letters_after.begin(), out.letters_after.end());
  for (int l : out_labels) {
    if (counts[l] == 0)
      fail("einsum equation '", equation, "': an output label does not appear in the inputs");
    if (seen[l]++) fail("einsum equation '", equation, "': an output label is repeated");
  }
}

}  // namespace reduce_detail

namespace {

size_t axis_or_fail(const InferContext &ctx, int64_t axis, size_t rank, const Shape &shape) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    ctx.fail("axis ", axis, " is out of range for input ", shape.to_string(), " of rank ", rank);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

std::vector<TensorType> infer_reduce(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    auto v = ctx.int_values(1);
    if (!v) ctx.defer({x.dtype});
    axes = *v;
  } else {
    axes = ctx.attrs.get_ints("axes", {});
  }
  const bool keepdims = ctx.attrs.get_int("keepdims", 1) != 0;
  const bool noop = ctx.attrs.get_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> mask;
  try {
    mask = reduce_detail::reduce_mask(axes, x.shape.rank(), noop);
  } catch (const Error &e) {
    ctx.fail(e.what(), " (input ", x.shape.to_string(), ")");
  }
  std::vector<int64_t> dims;
  for (size_t d = 0; d < mask.size(); ++d) {
    if (!mask[d])
      dims.push_back(x.shape[d]);
    else if (keepdims)
      dims.push_back(1);
  }
  return {TensorType{x.dtype, Shape(std::move(dims))}};
}

std::vector<TensorType> infer_arg(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const size_t axis = axis_or_fail(ctx, ctx.attrs.get_int("axis", 0), x.shape.rank(), x.shape);
  if (x.shape[axis] == 0) ctx.fail("cannot take the arg over the empty axis ", axis);
  std::vector<int64_t> dims = x.shape.dims();
  if (ctx.attrs.get_int("keepdims", 1) != 0)
    dims[axis] = 1;
  else
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  return {TensorType{DType::Int64, Shape(std::move(dims))}};
}

// Inputs: x, k (int64 tensor of one element). Outputs: values, int64 indices.
std::vector<TensorType> infer_top_k(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  const size_t axis = axis_or_fail(ctx, ctx.attrs.get_int("axis", -1), x.shape.rank(), x.shape);
  const auto k = ctx.int_values(1);
  if (!k) ctx.defer({x.dtype, DType::Int64});
  if (k->size() != 1) ctx.fail("k must hold exactly one value, got ", k->size());
  const int64_t kv = (*k)[0];
  if (kv < 0 || kv > x.shape[axis])
    ctx.fail("k = ", kv, " is out of range for axis ", axis, " of input ", x.shape.to_string());
  std::vector<int64_t> dims = x.shape.dims();
  dims[axis] = kv;
  return {TensorType{x.dtype, Shape(dims)}, TensorType{DType::Int64, Shape(dims)}};
}

// Inputs: x, axis (a scalar or one-element int tensor).
std::vector<TensorType> infer_cumulative(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (const auto axis = ctx.int_values(1)) {
    if (axis->size() != 1) ctx.fail("axis must hold exactly one value, got ", axis->size());
    axis_or_fail(ctx, (*axis)[0], x.shape.rank(), x.shape);
  }
  return {x};
}

std::vector<TensorType> infer_hardmax(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.shape.rank() == 0) ctx.fail("the input must have rank >= 1");
  axis_or_fail(ctx, ctx.attrs.get_int("axis", -1), x.shape.rank(), x.shape);
  return {x};
}

std::vector<TensorType> infer_einsum(const InferContext &ctx) {
  if (!ctx.attrs.has("equation")) ctx.fail("attribute equation is required");
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).dtype != ctx.input(0).dtype)
      ctx.fail("all inputs must have the same dtype: input 0 is ", dtype_name(ctx.input(0).dtype),
               ", input ", i, " is ", dtype_name(ctx.input(i).dtype));
    shapes.push_back(ctx.input(i).shape);
  }
  std::vector<std::vector<int>> in_labels;
  std::vector<int> out_labels;
  std::vector<int64_t> label_dims;
  try {
    reduce_detail::parse_einsum(ctx.attrs.get_string("equation", ""), shapes, in_labels, out_labels,
                                label_dims);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  std::vector<int64_t> dims;
  for (int l : out_labels) dims.push_back(label_dims[l]);
  return {TensorType{ctx.input(0).dtype, Shape(std::move(dims))}};
}

#define LUMEN_REDUCE_OP(op_name) \
  LUMEN_REGISTER_OP({.name = op_name, .min_inputs = 1, .max_inputs = 2, .infer = infer_reduce})
LUMEN_REDUCE_OP("reduce_sum");
LUMEN_REDUCE_OP("reduce_mean");
LUMEN_REDUCE_OP("reduce_max");
LUMEN_REDUCE_OP("reduce_min");
LUMEN_REDUCE_OP("reduce_prod");
LUMEN_REDUCE_OP("reduce_l1");
LUMEN_REDUCE_OP("reduce_l2");
LUMEN_REDUCE_OP("reduce_log_sum");
LUMEN_REDUCE_OP("reduce_log_sum_exp");
LUMEN_REDUCE_OP("reduce_sum_square");
LUMEN_REGISTER_OP({.name = "argmax", .infer = infer_arg});
LUMEN_REGISTER_OP({.name = "argmin", .infer = infer_arg});
LUMEN_REGISTER_OP(
    {.name = "top_k", .min_inputs = 2, .max_inputs = 2, .num_outputs = 2, .infer = infer_top_k});
LUMEN_REGISTER_OP({.name = "cumsum", .min_inputs = 2, .max_inputs = 2, .infer = infer_cumulative});
LUMEN_REGISTER_OP({.name = "cumprod", .min_inputs = 2, .max_inputs = 2, .infer = infer_cumulative});
LUMEN_REGISTER_OP({.name = "hardmax", .infer = infer_hardmax});
LUMEN_REGISTER_OP({.name = "einsum", .min_inputs = 1, .max_inputs = 64, .infer = infer_einsum});

}  // namespace
}  // namespace lumen
