// A per-channel affine map after a conv folded into its weights. conv2d (constant w, optional
// constant b), whose output feeds only the second node, followed by
//   - batch_norm (constant scale, bias, mean, var): s = scale / sqrt(var + eps),
//     t = beta - mean * s;
//   - or mul by a per-channel constant c ([1, M, 1, 1] or [M, 1, 1]; exporters write a frozen
//     batch norm as mul + add): s = c, t = 0 (the add then folds into the bias in
//     fuse_bias_activation);
// becomes one conv2d with w'[m] = w[m] * s[m], b'[m] = b[m] * s[m] + t[m]. The new weights are
// computed in double and stored in the weight dtype.
//
// A float32 batch_norm with constant parameters on an NCHW tensor that follows no conv at all
// (DenseNet's pre-activation BN) becomes a depthwise 1x1 conv2d (w[c] = s[c], b[c] = t[c]): the
// mul / add / activation that follow then fold and fuse into it like into any conv, one pass over
// memory instead of four.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

bool is_float_constant(const Value *v, DType dtype) {
  return v && v->is_constant() && v->dtype() == dtype;
}

std::vector<double> to_doubles(const Tensor &t) {
  const Tensor c = t.contiguous();
  std::vector<double> out(static_cast<size_t>(c.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = c.dtype() == DType::Float32 ? double(c.data<float>()[i]) : c.data<double>()[i];
  return out;
}

Tensor from_doubles(const Shape &shape, DType dtype, const std::vector<double> &values) {
  Tensor t = Tensor::empty(shape, dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::Float32)
      t.data<float>()[i] = static_cast<float>(values[i]);
    else
      t.data<double>()[i] = values[i];
  }
  return t;
}

// The conv2d feeding `v` and nothing else, when its weights (and bias) are constants.
Node *foldable_conv(const Graph &graph, const Value *v) {
  Node *conv = producer_if(v, "conv2d");
  if (!conv || !has_single_use(graph, conv->output())) return nullptr;
  const DType dtype = conv->output()->dtype();
  if (dtype != DType::Float32 && dtype != DType::Float64) return nullptr;
  if (!is_float_constant(conv->input(1), dtype)) return nullptr;
  if (conv->inputs().size() > 2 && conv->input(2) && !is_float_constant(conv->input(2), dtype))
    return nullptr;
  return conv;
}

// A conv and the per-channel y * s + t that follows it.
struct Affine {
  Node *conv = nullptr;
  std::vector<double> scale, shift;  // shift empty: zero
};

// The per-channel s and t of a batch_norm whose parameters are constants of `dtype`.
std::optional<std::pair<std::vector<double>, std::vector<double>>> constant_batch_norm(
    const Node *bn, DType dtype) {
  for (size_t i = 1; i <= 4; ++i)
    if (!is_float_constant(bn->input(i), dtype)) return std::nullopt;
  const double eps = bn->attrs().get_float("epsilon", 1e-5);
  const auto gamma = to_doubles(bn->input(1)->constant());
  const auto beta = to_doubles(bn->input(2)->constant());
  const auto mean = to_doubles(bn->input(3)->constant());
  const auto var = to_doubles(bn->input(4)->constant());
  std::vector<double> scale(gamma.size()), shift(gamma.size());
  for (size_t m = 0; m < gamma.size(); ++m) {
    scale[m] = gamma[m] / std::sqrt(var[m] + eps);
    shift[m] = beta[m] - mean[m] * scale[m];
  }
  return std::pair{std::move(scale), std::move(shift)};
}

std::optional<Affine> batch_norm_affine(const Graph &graph, const Node *bn) {
  Node *conv = foldable_conv(graph, bn->input(0));
  if (!conv) return std::nullopt;
  auto affine = constant_batch_norm(bn, conv->output()->dtype());
  if (!affine) return std::nullopt;
  return Affine{conv, std::move(affine->first), std::move(affine->second)};
}

// A depthwise 1x1 conv2d computing the same as batch_norm `bn` (see the top of the file).
Value *batch_norm_as_depthwise_conv(Graph &graph, const Node *bn) {
  const Value *x = bn->input(0);
  // After a conv the batch_norm either folded or must stay (the conv has other users).
  if (producer_if(x, "conv2d") || producer_if(x, "fused_conv")) return nullptr;
  if (bn->outputs().size() != 1 || x->dtype() != DType::Float32 || !x->has_shape() ||
      x->shape().rank() != 4 || x->shape()[1] == kUnknownDim || x->shape()[1] < 1)
    return nullptr;
  const auto affine = constant_batch_norm(bn, x->dtype());
  const int64_t channels = x->shape()[1];
  if (!affine || affine->first.size() != static_cast<size_t>(channels)) return nullptr;
  Value *w = graph.add_constant(graph.fresh_name(bn->name() + "_scale"),
                                from_doubles(Shape{channels, 1, 1, 1}, x->dtype(), affine->first));
  Value *b = graph.add_constant(graph.fresh_name(bn->name() + "_shift"),
                                from_doubles(Shape{channels}, x->dtype(), affine->second));
  Attributes attrs;
  attrs.set("group", channels);
  attrs.set("kernel_shape", std::vector<int64_t>{1, 1});
  return graph.add_op("conv2d", {bn->input(0), w, b}, attrs, graph.fresh_name(bn->name()));
}

std::optional<Affine> mul_affine(const Graph &graph, const Node *mul) {
  for (size_t i = 0; i < 2; ++i) {
    Node *conv = foldable_conv(graph, mul->input(i));
    const Value *c = mul->input(1 - i);
    if (!conv || !is_per_channel_constant(c, conv->output()) ||
        mul->output()->shape() != conv->output()->shape())
      continue;
    return Affine{conv, to_doubles(c->constant()), {}};
  }
  return std::nullopt;
}

class FoldConvBatchNorm final : public Pass {
 public:
  std::string_view name() const override { return "fold_conv_batch_norm"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *node : graph.topological_order()) {
      std::optional<Affine> affine;
      if (node->op() == "batch_norm")
        affine = batch_norm_affine(graph, node);
      else if (node->op() == "mul")
        affine = mul_affine(graph, node);
      if (!affine) {
        if (node->op() == "batch_norm") changed |= replace_with_depthwise_conv(graph, ctx, node);
        continue;
      }
      Node *conv = affine->conv;
      Value *folded = fold(graph, *affine, node->name());
      changed |= replace_pair(graph, ctx, conv, node, folded);
    }
    return changed;
  }

 private:
  static bool replace_with_depthwise_conv(Graph &graph, PassContext &ctx, Node *bn) {
    Value *conv = batch_norm_as_depthwise_conv(graph, bn);
    if (!conv) return false;
    if (!graph.can_replace(bn->output(), conv)) {
      graph.remove_node(conv->producer());
      return false;
    }
    ctx.note("batch_norm '", bn->name(), "' -> depthwise conv2d '", conv->producer()->name(), "'");
    graph.replace_all_uses(bn->output(), conv);
    graph.remove_node(bn);
    return true;
  }

  static Value *fold(Graph &graph, const Affine &affine, const std::string &follower) {
    const Node *conv = affine.conv;
    Value *w = conv->input(1);
    const bool has_bias = conv->inputs().size() > 2 && conv->input(2);
    const DType dtype = w->dtype();
    auto weights = to_doubles(w->constant());
    const size_t channels = affine.scale.size();
    const size_t per_channel = weights.size() / channels;
    std::vector<double> bias =
        has_bias ? to_doubles(conv->input(2)->constant()) : std::vector<double>(channels, 0.0);
    for (size_t m = 0; m < channels; ++m) {
      for (size_t i = 0; i < per_channel; ++i) weights[m * per_channel + i] *= affine.scale[m];
      bias[m] = bias[m] * affine.scale[m] + (affine.shift.empty() ? 0.0 : affine.shift[m]);
    }
    Value *new_w = graph.add_constant(graph.fresh_name(w->name() + "_scaled"),
                                      from_doubles(w->shape(), dtype, weights));
    std::vector<Value *> inputs{conv->input(0), new_w};
    if (has_bias || !affine.shift.empty())
      inputs.push_back(graph.add_constant(graph.fresh_name(follower + "_bias"),
                                          from_doubles(Shape{int64_t(channels)}, dtype, bias)));
    return graph.add_op("conv2d", inputs, conv->attrs(), graph.fresh_name(conv->name()));
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_conv_batch_norm() {
  return std::make_unique<FoldConvBatchNorm>();
}

}  // namespace lumen
