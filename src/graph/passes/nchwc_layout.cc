// Chains of float32 convs run in the channel-blocked layout (graph/ops/nchwc.cc): every conv2d /
// fused_conv that the blocked kernels cover becomes an nchwc_conv, and the layout changes only
// where a chain meets the rest of the graph (to_nchwc before, from_nchwc after). Inside a chain
// each conv reads the previous one's blocked output as it is: no per-conv packing of the input
// (a 1x1 conv as a GEMM packs all of its input every run) and no transposes into and out of
// vector lanes (a depthwise conv with channels in lanes does two per run).
//
// Covered convs: pointwise (1x1, one group, no padding, any stride), depthwise (one input and
// one output channel per group), dense (one group, any kernel: 3x3 stride-1 ones by Winograd or
// direct taps, whichever measures faster, the others by direct taps) and grouped convs whose
// groups hold whole blocks (any kernel, stride, padding and dilation for all), with known channel
// counts that are multiples of the block, constant weights, float32; and a chain's entry: a dense
// conv on channels that are not whole blocks (an image's three) reads its input plain and writes
// the blocked layout. Dense convs that mostly read padding stay in NCHW (mostly_padding). Ops that
// do not care about the layout join a chain too, so that it does not break around them:
// element-wise ops whose operands are single values or images with the output's channels (a
// squeeze-and-excitation block's Mul by [N, C, 1, 1] broadcasts the same way blocked),
// concatenation along the channels of whole blocks, global average pooling (a reduce_mean over H
// and W of the blocked image), and max and average pooling (their blocked ops). A chain is a set
// of such nodes connected through their inputs.
//
// A chain changes layout when it holds two convs that do real work, one of them spatial (more
// than one tap): there the blocked kernels win (in-process A/B at 2 threads: MNASNet 0.78-0.81x,
// MobileNetV2 0.83-0.93x, RegNet-Y 0.91x, EfficientNet-B0 0.91-0.96x the time; with dense convs
// in the chains, against Winograd and the packed GEMM in NCHW, bench/suite.py: DenseNet-121
// 0.83x, Inception-v1 0.87x, SqueezeNet 0.91x, Inception-v2 0.91x, ResNet-50 0.94x).
// Chains of 1x1 convs alone stay as they are: the blocked pointwise kernel only matches the
// packed GEMM there, and the layout changes would cost; a 1x1 depthwise conv (a batch norm folded
// into one) is a per-channel affine map that does not count. LUMEN_NCHWC=0 turns the pass off (to
// compare).
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "graph/op_schema.h"
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

bool float_image(const Value *v) {
  return v && v->dtype() == DType::Float32 && v->has_shape() && v->shape().rank() == 4;
}

bool single_value(const Value *v) {
  if (!v->has_shape() || v->shape().rank() > 4) return false;
  for (int64_t d : v->shape())
    if (d != 1) return false;
  return true;
}

// The share of (output, tap) pairs along one dim whose input index lies inside the image.
double share_inside(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                    int64_t dilation) {
  int64_t inside = 0;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t t = 0; t < kernel; ++t) {
      const int64_t i = o * stride - pad + t * dilation;
      inside += i >= 0 && i < in;
    }
  return out * kernel > 0 ? double(inside) / double(out * kernel) : 0.0;
}

// Whether most of a conv's multiply-adds read padding (DeepLab's ASPP: a 3x3 conv with dilation
// 12 on a 14x14 map): the NCHW conv runs those by tap windows, skipping them, where direct taps
// would multiply every zero. Unknown map sizes count as mostly padding when dilated.
bool mostly_padding(const Node *n) {
  const Shape &xs = n->input(0)->shape(), &ws = n->input(1)->shape();
  const auto strides = n->attrs().get_ints("strides", {1, 1});
  const auto pads = n->attrs().get_ints("pads", {0, 0, 0, 0});
  const auto dilations = n->attrs().get_ints("dilations", {1, 1});
  if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2) return true;
  const Value *y = n->output();
  if (!y->has_shape() || y->shape().rank() != 4 || xs[2] < 1 || xs[3] < 1 || y->shape()[2] < 1 ||
      y->shape()[3] < 1)
    return dilations[0] > 1 || dilations[1] > 1;
  const Shape &ys = y->shape();
  return share_inside(xs[2], ys[2], ws[2], strides[0], pads[0], dilations[0]) *
             share_inside(xs[3], ys[3], ws[3], strides[1], pads[1], dilations[1]) <
         0.5;
}

// A float32 2-D conv with constant weights: what the blocked kernels can take.
bool conv_with_constant_weights(const Node *n) {
  if (n->op() != "conv2d" && n->op() != "fused_conv") return false;
  const Value *w = n->input(1);
  return float_image(n->input(0)) && w->is_constant() && w->shape().rank() == 4;
}

// A dense conv whose input channels are not whole blocks (a network's first conv, on 3 channels)
// but whose outputs are: it reads its input plain and writes the chain's blocked layout.
bool entry_conv(const Node *n) {
  if (!conv_with_constant_weights(n)) return false;
  const Value *w = n->input(1);
  const int64_t c = n->input(0)->shape()[1];
  return c > 0 && !blockable_channels(c) && blockable_channels(w->shape()[0]) &&
         w->shape()[1] == c && n->attrs().get_int("group", 1) == 1 && !mostly_padding(n);
}

bool covered_conv(const Node *n) {
  if (!conv_with_constant_weights(n)) return false;
  if (entry_conv(n)) return true;
  const Shape &ws = n->input(1)->shape();
  const int64_t c = n->input(0)->shape()[1], m = ws[0], group = n->attrs().get_int("group", 1);
  if (!blockable_channels(c) || !blockable_channels(m)) return false;
  const bool pointwise = group == 1 && ws[1] == c && ws[2] == 1 && ws[3] == 1 &&
                         all_zero(n->attrs().get_ints("pads", {0, 0, 0, 0}));
  const bool depthwise = group == c && m == c && ws[1] == 1;
  // Groups of whole blocks (RegNet's 8 channels per group), any kernel.
  const bool grouped = group > 1 && ws[1] * group == c && ws[1] % kBlock == 0 &&
                       (m / group) % kBlock == 0 && m % group == 0;
  const bool dense = group == 1 && ws[1] == c && !mostly_padding(n);
  return pointwise || depthwise || grouped || dense;
}

// Whether a covered conv is more than a per-channel affine map (a 1x1 depthwise conv).
bool does_real_work(const Node *n) {
  const Shape &ws = n->input(1)->shape();
  return ws[1] > 1 || ws[2] * ws[3] > 1;
}

// A conv with more than one tap.
bool is_spatial(const Node *n) {
  const Shape &ws = n->input(1)->shape();
  return ws[2] * ws[3] > 1;
}

bool is_binary_elementwise(const std::string &op) {
  return op == "add" || op == "sub" || op == "mul" || op == "div" || op == "maximum" ||
         op == "minimum";
}

// An op that computes the same blocked: see the top of the file.
bool layout_free(const Node *n) {
  if (n->outputs().size() != 1 || !float_image(n->output())) return false;
  const int64_t c = n->output()->shape()[1];
  if (!blockable_channels(c)) return false;
  if (n->op() == "global_avg_pool" || n->op() == "max_pool2d" || n->op() == "avg_pool2d")
    return float_image(n->input(0));
  if (n->op() == "concat") {  // along the channels, of whole blocks
    const int64_t axis = n->attrs().get_int("axis", 0);
    if (axis != 1 && axis != -3) return false;
    for (const Value *in : n->inputs())
      if (!float_image(in) || !blockable_channels(in->shape()[1])) return false;
    return true;
  }
  const OpSchema *schema = find_op(n->op());
  if (!(schema && schema->elementwise) && !is_binary_elementwise(n->op())) return false;
  for (const Value *in : n->inputs())
    if (in && !single_value(in) && !(float_image(in) && in->shape()[1] == c)) return false;
  return true;
}

// Union-find over the nodes that can run blocked: one chain per connected set.
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

Attributes block_attrs() {
  Attributes a;
  a.set("block", kBlock);
  return a;
}

class NchwcLayout final : public Pass {
 public:
  std::string_view name() const override { return "nchwc_layout"; }

  bool run(Graph &graph, PassContext &ctx) override {
    if (const char *env = std::getenv("LUMEN_NCHWC"); env && std::string(env) == "0") return false;
    const std::vector<Node *> order = graph.topological_order();
    Chains chains;
    for (Node *n : order)
      if (covered_conv(n) || layout_free(n)) chains.add(n);
    for (Node *n : order) {
      if (!chains.has(n)) continue;
      const bool conv = covered_conv(n);
      for (size_t i = 0; i < n->inputs().size(); ++i) {
        const Value *in = n->input(i);
        if (conv && i != 0 && i != 3) continue;  // weights and bias are not images
        if (i == 0 && entry_conv(n)) continue;   // read plain
        if (in && in->producer() && chains.has(in->producer())) chains.join(n, in->producer());
      }
    }
    struct Worth {
      int real_convs = 0;
      bool spatial = false;
      bool enough() const { return real_convs >= 2 && spatial; }
    };
    std::map<Node *, Worth> worth;  // per chain root
    for (Node *n : order)
      if (chains.has(n) && covered_conv(n)) {
        Worth &w = worth[chains.root(n)];
        w.real_convs += does_real_work(n);
        w.spatial = w.spatial || is_spatial(n);
      }

    std::map<const Value *, Value *> blocked;  // plain value -> its blocked twin
    const auto blocked_of = [&](Value *plain) {
      if (auto it = blocked.find(plain); it != blocked.end()) return it->second;
      Value *b = graph.add_op("to_nchwc", {plain}, block_attrs(), graph.fresh_name(plain->name()));
      blocked[plain] = b;
      return b;
    };
    bool changed = false;
    for (Node *n : order) {
      if (!chains.has(n) || !worth[chains.root(n)].enough()) continue;
      Value *y = nullptr;
      const std::string name = graph.fresh_name(n->name());
      if (covered_conv(n)) {
        std::vector<Value *> inputs = n->inputs();
        inputs.resize(4, nullptr);
        if (!entry_conv(n)) inputs[0] = blocked_of(inputs[0]);
        if (inputs[3]) inputs[3] = blocked_of(inputs[3]);
        while (!inputs.empty() && !inputs.back()) inputs.pop_back();
        Attributes attrs = n->attrs();
        attrs.set("block", kBlock);
        y = graph.add_op("nchwc_conv", inputs, attrs, name);
      } else if (n->op() == "max_pool2d" || n->op() == "avg_pool2d") {
        Attributes attrs = n->attrs();
        attrs.set("block", kBlock);
        y = graph.add_op("nchwc_" + n->op(), {blocked_of(n->input(0))}, attrs, name);
      } else if (n->op() == "global_avg_pool") {
        Attributes attrs;
        attrs.set("axes", std::vector<int64_t>{2, 3});
        attrs.set("keepdims", int64_t{1});
        y = graph.add_op("reduce_mean", {blocked_of(n->input(0))}, attrs, name);
      } else {
        std::vector<Value *> inputs;
        for (Value *in : n->inputs())
          inputs.push_back(!in || single_value(in) ? in : blocked_of(in));
        Attributes attrs = n->attrs();
        if (n->op() == "concat") attrs.set("axis", int64_t{1});  // -3 would be H blocked
        y = graph.add_op(n->op(), inputs, attrs, name);
      }
      Value *plain = graph.add_op("from_nchwc", {y}, block_attrs(), graph.fresh_name(n->name()));
      graph.replace_all_uses(n->output(), plain);
      blocked[plain] = y;
      ctx.note(n->op(), " ", n->name(), " in the blocked layout (", y->producer()->op(), ")");
      graph.remove_node(n);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_nchwc_layout() {
  return std::make_unique<NchwcLayout>();
}

}  // namespace lumen
