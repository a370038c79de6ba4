// conv_nd over two spatial dims of float32/float64 values becomes conv2d (same attributes), the
// op with the fast kernels (blocked layout, Winograd, depthwise, fused epilogues). The importer
// writes conv_nd for the dtypes conv2d has no kernel for; a half-precision model's convs, widened
// to float32 at compile time (widen_half_precision.h), then reach conv2d through this pass.
#include "graph/passes/pass.h"

namespace lumen {
namespace {

bool two_spatial_dims(const Node *node) {
  const Value *x = node->input(0);
  return x->has_shape() && x->shape().rank() == 4 &&
         (x->dtype() == DType::Float32 || x->dtype() == DType::Float64);
}

class ConvNdToConv2d final : public Pass {
 public:
  std::string_view name() const override { return "conv_nd_to_conv2d"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *node : graph.topological_order()) {
      if (node->op() != "conv_nd" || !two_spatial_dims(node)) continue;
      Value *conv = graph.add_op("conv2d", node->inputs(), node->attrs(),
                                 graph.fresh_name(node->name() + "/conv2d"));
      ctx.note("conv_nd '", node->name(), "' -> conv2d '", conv->producer()->name(), "'");
      graph.replace_all_uses(node->output(), conv);
      graph.remove_node(node);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_conv_nd_to_conv2d() {
  return std::make_unique<ConvNdToConv2d>();
}

}  // namespace lumen
