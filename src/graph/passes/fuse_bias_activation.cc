// Fuses what follows a conv or matrix product into its kernel's epilogue:
//   - conv2d/fused_conv, gemm/fused_gemm, matmul/fused_matmul without an activation, followed by
//     an activation of graph/ops/epilogue_activations.h (relu, leaky_relu, clip, sigmoid, silu,
//     tanh, gelu, hard_swish, hard_sigmoid) -> the fused op with "activation" and the activation's
//     attributes as "activation_<name>";
//   - conv2d/fused_conv without an activation, followed by add of a constant per-channel bias
//     shaped [1, M, 1, 1] or [M, 1, 1] -> the same op with that constant added to its bias (the
//     existing bias must then be a constant or absent).
// Both need the producer's output to feed only the follower, and float32/float64.
#include <algorithm>
#include <optional>
#include <vector>

#include "graph/ops/epilogue_activations.h"
#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

const char *fused_op_for(std::string_view op) {
  if (op == "conv2d" || op == "fused_conv") return "fused_conv";
  if (op == "gemm" || op == "fused_gemm") return "fused_gemm";
  if (op == "matmul" || op == "fused_matmul") return "fused_matmul";
  return nullptr;
}

bool is_conv(const Node *n) {
  return n->op() == "conv2d" || n->op() == "fused_conv";
}

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64;
}

// The producer of `v` that can take what its single user does into its epilogue.
Node *fusable_producer(const Graph &graph, const Value *v) {
  Node *p = v ? v->producer() : nullptr;
  if (!p || !fused_op_for(p->op()) || !has_single_use(graph, v) || !is_float(v->dtype()))
    return nullptr;
  if (!p->attrs().get_string("activation", "").empty()) return nullptr;
  return p;
}

// The activation's attributes, prefixed for the fused node; nullopt when the node has one the
// epilogue does not know (it would be dropped, changing the numerics).
std::optional<Attributes> prefixed_activation_attributes(const Node *activation_node,
                                                         const EpilogueActivation &activation) {
  Attributes out;
  for (const auto &[key, value] : activation_node->attrs().items()) {
    if (!takes_param(activation, key)) return std::nullopt;
    out.set(std::string(kActivationPrefix) + key, value);
  }
  return out;
}

Tensor sum_bias(const Tensor *old_bias, const Tensor &added, int64_t channels, DType dtype) {
  Tensor out = Tensor::empty(Shape{channels}, dtype);
  const Tensor a = added.contiguous();
  const Tensor b = old_bias ? old_bias->contiguous() : Tensor();
  for (int64_t m = 0; m < channels; ++m) {
    if (dtype == DType::Float32)
      out.data<float>()[m] = (old_bias ? b.data<float>()[m] : 0.0f) + a.data<float>()[m];
    else
      out.data<double>()[m] = (old_bias ? b.data<double>()[m] : 0.0) + a.data<double>()[m];
  }
  return out;
}

class FuseBiasActivation final : public Pass {
 public:
  std::string_view name() const override { return "fuse_bias_activation"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    // Nodes created here are not in the snapshot, but later nodes see them as producers, so
    // conv -> add(bias) -> relu fuses in one run.
    for (Node *node : graph.topological_order()) {
      if (node->op() == "add")
        changed |= fold_channel_bias(graph, ctx, node);
      else if (const EpilogueActivation *activation = find_epilogue_activation(node->op()))
        changed |= fuse_activation(graph, ctx, node, *activation);
    }
    return changed;
  }

 private:
  static bool fuse_activation(Graph &graph, PassContext &ctx, Node *act,
                              const EpilogueActivation &activation) {
    Node *producer = fusable_producer(graph, act->input(0));
    if (!producer || act->output()->dtype() != producer->output()->dtype()) return false;
    auto attrs = prefixed_activation_attributes(act, activation);
    if (!attrs) return false;
    for (const auto &[key, value] : producer->attrs().items()) attrs->set(key, value);
    attrs->set("activation", std::string(activation.name));
    const char *op = fused_op_for(producer->op());
    Value *fused = graph.add_op(op, producer->inputs(), *attrs, graph.fresh_name(producer->name()));
    return replace_pair(graph, ctx, producer, act, fused);
  }

  static bool fold_channel_bias(Graph &graph, PassContext &ctx, Node *add) {
    for (size_t i = 0; i < 2; ++i) {
      Node *conv = fusable_producer(graph, add->input(i));
      Value *c = add->input(1 - i);
      if (!conv || !is_conv(conv) || !is_per_channel_constant(c, conv->output())) continue;
      if (add->output()->shape() != conv->output()->shape()) continue;
      const Value *old_bias = conv->inputs().size() > 2 ? conv->input(2) : nullptr;
      if (old_bias && !old_bias->is_constant()) continue;
      const DType dtype = conv->output()->dtype();
      const int64_t channels = conv->output()->shape()[1];
      Value *bias = graph.add_constant(
          graph.fresh_name(conv->name() + "_bias"),
          sum_bias(old_bias ? &old_bias->constant() : nullptr, c->constant(), channels, dtype));
      std::vector<Value *> inputs = conv->inputs();
      inputs.resize(std::max<size_t>(inputs.size(), 3));
      inputs[2] = bias;
      Value *fused =
          graph.add_op(conv->op(), inputs, conv->attrs(), graph.fresh_name(conv->name()));
      return replace_pair(graph, ctx, conv, add, fused);
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_bias_activation() {
  return std::make_unique<FuseBiasActivation>();
}

}  // namespace lumen
