// conv2d (constant w, optional constant b) -> batch_norm (constant scale, bias, mean, var), where
// the conv's output feeds only the batch_norm: one conv2d with
//   w'[m] = w[m] * s[m],  b'[m] = (b[m] - mean[m]) * s[m] + beta[m],  s = scale / sqrt(var + eps).
// The new weights are computed in double and stored in the weight dtype.
#include <cmath>
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

// The conv2d whose output feeds only `bn`, when everything the fold needs is a constant.
Node *foldable_conv(const Graph &graph, const Node *bn) {
  Node *conv = producer_if(bn->input(0), "conv2d");
  if (!conv || !has_single_use(graph, conv->output())) return nullptr;
  const DType dtype = conv->output()->dtype();
  if (dtype != DType::Float32 && dtype != DType::Float64) return nullptr;
  if (!is_float_constant(conv->input(1), dtype)) return nullptr;
  if (conv->inputs().size() > 2 && conv->input(2) && !is_float_constant(conv->input(2), dtype))
    return nullptr;
  for (size_t i = 1; i <= 4; ++i)
    if (!is_float_constant(bn->input(i), dtype)) return nullptr;
  return conv;
}

class FoldConvBatchNorm final : public Pass {
 public:
  std::string_view name() const override { return "fold_conv_batch_norm"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *bn : graph.topological_order()) {
      if (bn->op() != "batch_norm") continue;
      Node *conv = foldable_conv(graph, bn);
      if (!conv) continue;
      Value *folded = fold(graph, conv, bn);
      if (!graph.can_replace(bn->output(), folded)) {
        graph.remove_node(folded->producer());
        continue;
      }
      ctx.note("conv2d '", conv->name(), "' + batch_norm '", bn->name(), "' -> conv2d '",
               folded->producer()->name(), "'");
      graph.replace_all_uses(bn->output(), folded);
      // Both are dead now; removing them here keeps a second run from matching them again.
      graph.remove_node(bn);
      graph.remove_node(conv);
      changed = true;
    }
    return changed;
  }

 private:
  static Value *fold(Graph &graph, const Node *conv, const Node *bn) {
    Value *w = conv->input(1);
    const bool has_bias = conv->inputs().size() > 2 && conv->input(2);
    const DType dtype = w->dtype();
    const double eps = bn->attrs().get_float("epsilon", 1e-5);
    const auto scale = to_doubles(bn->input(1)->constant());
    const auto beta = to_doubles(bn->input(2)->constant());
    const auto mean = to_doubles(bn->input(3)->constant());
    const auto var = to_doubles(bn->input(4)->constant());
    auto weights = to_doubles(w->constant());
    const size_t channels = scale.size();
    const size_t per_channel = weights.size() / channels;
    std::vector<double> bias =
        has_bias ? to_doubles(conv->input(2)->constant()) : std::vector<double>(channels, 0.0);
    for (size_t m = 0; m < channels; ++m) {
      const double s = scale[m] / std::sqrt(var[m] + eps);
      for (size_t i = 0; i < per_channel; ++i) weights[m * per_channel + i] *= s;
      bias[m] = (bias[m] - mean[m]) * s + beta[m];
    }
    Value *new_w = graph.add_constant(graph.fresh_name(w->name() + "_bn"),
                                      from_doubles(w->shape(), dtype, weights));
    Value *new_b = graph.add_constant(graph.fresh_name(bn->name() + "_bias"),
                                      from_doubles(Shape{int64_t(channels)}, dtype, bias));
    return graph.add_op("conv2d", {conv->input(0), new_w, new_b}, conv->attrs(),
                        graph.fresh_name(conv->name()));
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_conv_batch_norm() {
  return std::make_unique<FoldConvBatchNorm>();
}

}  // namespace lumen
