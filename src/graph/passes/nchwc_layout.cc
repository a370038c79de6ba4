// Chains of float32 convs run in the channel-blocked layout (graph/ops/nchwc.cc): every conv2d /
// fused_conv that the blocked kernels cover becomes an nchwc_conv, and the layout changes only
// where a chain meets the rest of the graph (to_nchwc before, from_nchwc after). Inside a chain
// each conv reads the previous one's blocked output as it is: no per-conv packing of the input
// (a 1x1 conv as a GEMM packs all of its input every run) and no transposes into and out of
// vector lanes (a depthwise conv with channels in lanes does two per run).
//
// Covered: pointwise convs (1x1, one group, no padding, any stride) and depthwise convs (one
// input and one output channel per group, any kernel, stride, padding and dilation), with known
// channel counts that are multiples of the block, constant weights, float32. A chain is a set of
// such convs connected through their input or residual; it changes layout only when it holds two
// convs that do real work (a 1x1 depthwise conv, a batch norm folded into one, is a per-channel
// affine map that costs less than the layout changes around it: DenseNet's pre-activation
// batch norm + 1x1 conv pairs ran 3% slower blocked). LUMEN_NCHWC=0 turns the pass off (to
// compare).
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

constexpr int64_t kBlock = 8;

bool blockable_channels(int64_t c) {
  return c != kUnknownDim && c > 0 && c % kBlock == 0;
}

bool all_zero(const std::vector<int64_t> &v) {
  for (int64_t x : v)
    if (x != 0) return false;
  return true;
}

bool covered(const Node *n) {
  if (n->op() != "conv2d" && n->op() != "fused_conv") return false;
  const Value *x = n->input(0), *w = n->input(1);
  if (x->dtype() != DType::Float32 || !x->has_shape() || x->shape().rank() != 4) return false;
  if (!w->is_constant() || w->shape().rank() != 4) return false;
  const Shape &ws = w->shape();
  const int64_t c = x->shape()[1], m = ws[0], group = n->attrs().get_int("group", 1);
  if (!blockable_channels(c) || !blockable_channels(m)) return false;
  const bool pointwise = group == 1 && ws[1] == c && ws[2] == 1 && ws[3] == 1 &&
                         all_zero(n->attrs().get_ints("pads", {0, 0, 0, 0}));
  const bool depthwise = group == c && m == c && ws[1] == 1;
  return pointwise || depthwise;
}

// Whether a covered conv is more than a per-channel affine map (a 1x1 depthwise conv).
bool does_real_work(const Node *n) {
  const Shape &ws = n->input(1)->shape();
  return ws[1] > 1 || ws[2] * ws[3] > 1;
}

// Union-find over the covered convs: two are in one chain when one reads the other's output.
class Chains {
 public:
  Node *root(Node *n) {
    while (parent_.at(n) != n) n = parent_[n] = parent_[parent_[n]];
    return n;
  }
  void add(Node *n) { parent_[n] = n; }
  bool has(Node *n) const { return parent_.count(n) != 0; }
  void join(Node *a, Node *b) { parent_[root(a)] = root(b); }

 private:
  std::map<Node *, Node *> parent_;
};

class NchwcLayout final : public Pass {
 public:
  std::string_view name() const override { return "nchwc_layout"; }

  bool run(Graph &graph, PassContext &ctx) override {
    if (const char *env = std::getenv("LUMEN_NCHWC"); env && std::string(env) == "0") return false;
    const std::vector<Node *> order = graph.topological_order();
    Chains chains;
    for (Node *n : order)
      if (covered(n)) chains.add(n);
    std::map<Node *, int> chain_size;  // convs doing real work per chain
    for (Node *n : order) {
      if (!chains.has(n)) continue;
      for (size_t i : {size_t(0), size_t(3)}) {
        const Value *in = i < n->inputs().size() ? n->input(i) : nullptr;
        if (in && in->producer() && chains.has(in->producer())) chains.join(n, in->producer());
      }
    }
    for (Node *n : order)
      if (chains.has(n) && does_real_work(n)) ++chain_size[chains.root(n)];

    std::map<const Value *, Value *> blocked;  // plain value -> its blocked twin
    const auto blocked_of = [&](Value *plain) {
      if (auto it = blocked.find(plain); it != blocked.end()) return it->second;
      Value *b = graph.add_op("to_nchwc", {plain}, block_attrs(), graph.fresh_name(plain->name()));
      blocked[plain] = b;
      return b;
    };
    bool changed = false;
    for (Node *n : order) {
      if (!chains.has(n) || chain_size[chains.root(n)] < 2) continue;
      std::vector<Value *> inputs = n->inputs();
      inputs.resize(4, nullptr);
      inputs[0] = blocked_of(inputs[0]);
      if (inputs[3]) inputs[3] = blocked_of(inputs[3]);
      while (!inputs.empty() && !inputs.back()) inputs.pop_back();
      Attributes attrs = n->attrs();
      attrs.set("block", kBlock);
      Value *y = graph.add_op("nchwc_conv", inputs, attrs, graph.fresh_name(n->name()));
      Value *plain = graph.add_op("from_nchwc", {y}, block_attrs(), graph.fresh_name(n->name()));
      graph.replace_all_uses(n->output(), plain);
      blocked[plain] = y;
      ctx.note("nchwc_conv: ", n->op(), " ", n->name(), " in the blocked layout");
      graph.remove_node(n);
      changed = true;
    }
    return changed;
  }

 private:
  static Attributes block_attrs() {
    Attributes a;
    a.set("block", kBlock);
    return a;
  }
};

}  // namespace

std::unique_ptr<Pass> make_nchwc_layout() {
  return std::make_unique<NchwcLayout>();
}

}  // namespace lumen
