// A shallow float32 conv (a network's first layer) whose large output t feeds only a max_pool2d:
// fused_conv_max_pool (graph/ops/conv_max_pool.h), which makes t band by band in cache
// instead of writing it to memory for the pool to read back. Runs after fuse_bias_activation, so
// SqueezeNet's conv -> relu -> max pool becomes one node.
//
// Fires only when t has at least `min_bytes` per image (default 1 MiB: larger than a core's L2; a
// smaller t stays in cache anyway), the conv has one group, at most kMaxDepth values per output
// (C * kh * kw: its patches are gathered pixel by pixel), no residual and an activation of none,
// relu or clip (applied as a clamp), the pool has one output, and every window of both overlaps
// its input (pads smaller than the windows: a band then always reads rows).
#include <string>
#include <vector>

#include "graph/ops/conv_max_pool.h"
#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

constexpr int64_t kDefaultMinBytes = 1 << 20;
// SqueezeNet's 3x3 first conv (27) gained 3% of the model at 2 threads; the 7x7 ones of ResNet-50
// and DenseNet-121 (147), whose unfused GEMM tiles are deep enough, lost 1-2%.
constexpr int64_t kMaxDepth = 64;

bool known_4d(const Value *v) {
  if (!v || !v->has_shape() || v->shape().rank() != 4) return false;
  for (int64_t d : v->shape())
    if (d == kUnknownDim) return false;
  return true;
}

// Whether every window along both axes overlaps the input: pads below the window's extent.
bool windows_overlap_input(const Attributes &attrs, int64_t kh, int64_t kw) {
  const auto pads = attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = attrs.get_ints("dilations", {1, 1});
  if (pads.size() != 4 || dilations.size() != 2) return false;
  const int64_t extent[2] = {dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1};
  for (size_t i = 0; i < 4; ++i)
    if (pads[i] < 0 || pads[i] >= extent[i % 2]) return false;
  return true;
}

// The conv producing t, when it qualifies (see the top) and only the pool reads t.
Node *fusable_conv(const Graph &graph, const Value *t, int64_t min_bytes) {
  Node *conv = t->producer();
  if (!conv || (conv->op() != "conv2d" && conv->op() != "fused_conv")) return nullptr;
  if (!has_single_use(graph, t) || (conv->inputs().size() > 3 && conv->input(3))) return nullptr;
  if (t->dtype() != DType::Float32 || !known_4d(t) || !known_4d(conv->input(0))) return nullptr;
  const std::string act = conv->attrs().get_string("activation", "");
  if (!act.empty() && act != "relu" && act != "clip") return nullptr;
  const Value *w = conv->input(1);
  if (!known_4d(w) || conv->attrs().get_int("group", 1) != 1) return nullptr;
  const Shape &ws = w->shape(), &ts = t->shape();
  if (ws[1] * ws[2] * ws[3] > kMaxDepth || !windows_overlap_input(conv->attrs(), ws[2], ws[3]))
    return nullptr;
  return ts[1] * ts[2] * ts[3] * 4 >= min_bytes ? conv : nullptr;
}

class FuseConvMaxPool final : public Pass {
 public:
  explicit FuseConvMaxPool(int64_t min_bytes) : min_bytes_(min_bytes) {}
  std::string_view name() const override { return "fuse_conv_max_pool"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *pool : graph.topological_order()) {
      if (pool->op() != "max_pool2d" || pool->outputs().size() != 1) continue;
      const auto kernel = pool->attrs().get_ints("kernel_shape", {});
      if (kernel.size() != 2 || !windows_overlap_input(pool->attrs(), kernel[0], kernel[1]))
        continue;
      Node *conv = fusable_conv(graph, pool->input(0), min_bytes_);
      if (!conv) continue;
      std::vector<Value *> inputs = conv->inputs();
      inputs.resize(3);
      Attributes attrs = conv->attrs();
      for (const auto &[key, value] : pool->attrs().items())
        attrs.set(std::string(kPoolPrefix) + key, value);
      Value *fused =
          graph.add_op("fused_conv_max_pool", inputs, attrs, graph.fresh_name(pool->name()));
      changed |= replace_pair(graph, ctx, conv, pool, fused);
    }
    return changed;
  }

 private:
  int64_t min_bytes_;
};

}  // namespace

std::unique_ptr<Pass> make_fuse_conv_max_pool(int64_t min_bytes) {
  return std::make_unique<FuseConvMaxPool>(min_bytes < 0 ? kDefaultMinBytes : min_bytes);
}

}  // namespace lumen
