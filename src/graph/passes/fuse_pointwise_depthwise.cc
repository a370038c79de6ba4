// A pointwise nchwc_conv (1x1, one group, stride 1, unpadded, on a blocked input, no residual)
// whose output t feeds only a depthwise nchwc_conv (no residual): nchwc_pointwise_depthwise
// (graph/ops/pointwise_depthwise.h), which makes t band by band in cache instead of writing it to
// memory for the depthwise conv to read back. t is the expansion of an inverted residual block,
// the largest tensor of MobileNet, EfficientNet and MNASNet blocks (MobileNetV2's first is 4.6 MiB
// per image). Runs after nchwc_layout, on its blocked steps. LUMEN_FUSE_POINTWISE_DEPTHWISE=0
// turns it off (to compare).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "graph/ops/pointwise_depthwise.h"
#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

bool has_residual(const Node *conv) {
  return conv->inputs().size() > 3 && conv->input(3);
}

bool all_equal(const std::vector<int64_t> &v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t d) { return d == x; });
}

bool float_blocked(const Value *v) {
  return v && v->dtype() == DType::Float32 && v->has_shape() && v->shape().rank() == 5;
}

// Weights of known shape [M, C, kH, kW].
const Shape *weight_shape(const Node *conv) {
  const Value *w = conv->input(1);
  return w && w->has_shape() && w->shape().rank() == 4 ? &w->shape() : nullptr;
}

bool is_depthwise(const Node *conv) {
  const Shape *w = weight_shape(conv);
  return w && !has_residual(conv) && float_blocked(conv->input(0)) && (*w)[1] == 1 &&
         conv->attrs().get_int("group", 1) == (*w)[0] && (*w)[0] > 1;
}

bool is_fusable_pointwise(const Node *conv) {
  const Shape *w = weight_shape(conv);
  const Attributes &a = conv->attrs();
  return w && !has_residual(conv) && float_blocked(conv->input(0)) && (*w)[2] == 1 &&
         (*w)[3] == 1 && a.get_int("group", 1) == 1 && all_equal(a.get_ints("strides", {}), 1) &&
         all_equal(a.get_ints("pads", {}), 0);
}

class FusePointwiseDepthwise final : public Pass {
 public:
  std::string_view name() const override { return "fuse_pointwise_depthwise"; }

  bool run(Graph &graph, PassContext &ctx) override {
    const char *env = std::getenv("LUMEN_FUSE_POINTWISE_DEPTHWISE");
    if (env && std::string(env) == "0") return false;
    bool changed = false;
    for (Node *depthwise : graph.topological_order()) {
      if (depthwise->op() != "nchwc_conv" || !is_depthwise(depthwise)) continue;
      Node *pointwise = sole_producer_if(graph, depthwise->input(0), "nchwc_conv");
      if (!pointwise || !is_fusable_pointwise(pointwise)) continue;
      std::vector<Value *> inputs = pointwise->inputs();
      inputs.resize(3);
      inputs.push_back(depthwise->input(1));
      inputs.push_back(depthwise->inputs().size() > 2 ? depthwise->input(2) : nullptr);
      Attributes attrs = depthwise->attrs();
      for (const auto &[key, value] : pointwise->attrs().items())
        if (key != "block") attrs.set(std::string(kPointwisePrefix) + key, value);
      Value *fused = graph.add_op("nchwc_pointwise_depthwise", inputs, attrs,
                                  graph.fresh_name(depthwise->name()));
      changed |= replace_pair(graph, ctx, pointwise, depthwise, fused);
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_pointwise_depthwise() {
  return std::make_unique<FusePointwiseDepthwise>();
}

}  // namespace lumen
