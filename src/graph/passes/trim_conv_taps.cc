// Kernel taps that read only padding for every output position are dropped from a conv: the
// weights lose those rows/columns and the pads shrink by as much, which leaves the output and
// its values as they were. Dilated convs on small maps are the common case: DeepLab's ASPP runs
// 3x3 convs with dilation 24 and 36 on a 14x14 map, where only the centre tap ever meets the
// input (a 3x3 conv that costs 9x a 1x1 one). Any spatial rank (conv2d, fused_conv, conv_nd),
// stride, dilation and group; needs the input's spatial dims and constant weights.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"
#include "lumen/ops.h"

namespace lumen {
namespace {

struct TapRange {
  int64_t first = 0, last = 0;  // the kept taps, inclusive
};

// The taps of one spatial dim worth keeping: from the first to the last that reads the input for
// some output position, widened where trimming more would need a negative pad.
std::optional<TapRange> kept_taps(int64_t size, int64_t kernel, int64_t stride, int64_t dilation,
                                  int64_t pad_begin, int64_t pad_end, int64_t out) {
  auto reads_input = [&](int64_t tap) {
    // Input coordinates of this tap rise with the output position: the first one >= 0 decides.
    const int64_t offset = tap * dilation - pad_begin;
    const int64_t first_out = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    return first_out < out && first_out * stride + offset < size;
  };
  int64_t first = 0, last = kernel - 1;
  while (first < kernel && !reads_input(first)) ++first;
  if (first == kernel) return std::nullopt;  // all padding: the output is the bias; leave it
  while (!reads_input(last)) --last;
  first = std::min(first, pad_begin / dilation);
  last = std::max(last, kernel - 1 - pad_end / dilation);
  return TapRange{first, last};
}

// w[:, :, ranges...] of a weight [M, C/group, k1, ..., kr], by the slice op.
Tensor slice_taps(const Tensor &weight, const std::vector<TapRange> &ranges) {
  std::vector<int64_t> starts, ends, axes;
  for (size_t d = 0; d < ranges.size(); ++d) {
    starts.push_back(ranges[d].first);
    ends.push_back(ranges[d].last + 1);
    axes.push_back(static_cast<int64_t>(d + 2));
  }
  const Shape n{static_cast<int64_t>(ranges.size())};
  return call_op("slice",
                 {weight, Tensor::from_vector<int64_t>(n, starts),
                  Tensor::from_vector<int64_t>(n, ends), Tensor::from_vector<int64_t>(n, axes)})[0];
}

class TrimConvTaps final : public Pass {
 public:
  std::string_view name() const override { return "trim_conv_taps"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *node : graph.topological_order()) {
      const std::string &op = node->op();
      if (op != "conv2d" && op != "fused_conv" && op != "conv_nd") continue;
      const Value *x = node->input(0), *w = node->input(1);
      if (!w || !w->is_constant() || holds_objects(w->dtype()) || !x->has_shape() ||
          !node->output()->has_shape())
        continue;
      const Shape &xs = x->shape(), &ws = w->shape(), &ys = node->output()->shape();
      const size_t rank = ws.rank() - 2;
      if (ws.rank() < 3 || xs.rank() != ws.rank() || ys.rank() != ws.rank()) continue;
      const Attributes &a = node->attrs();
      const auto strides = a.get_ints("strides", std::vector<int64_t>(rank, 1));
      const auto dilations = a.get_ints("dilations", std::vector<int64_t>(rank, 1));
      const auto pads = a.get_ints("pads", std::vector<int64_t>(2 * rank, 0));
      if (strides.size() != rank || dilations.size() != rank || pads.size() != 2 * rank) continue;

      std::vector<TapRange> ranges;
      bool trims = false;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t size = xs[d + 2], kernel = ws[d + 2], out = ys[d + 2];
        if (size < 1 || out < 1 || strides[d] < 1 || dilations[d] < 1) break;
        const auto kept =
            kept_taps(size, kernel, strides[d], dilations[d], pads[d], pads[d + rank], out);
        if (!kept) break;
        trims = trims || kept->first > 0 || kept->last < kernel - 1;
        ranges.push_back(*kept);
      }
      if (ranges.size() != rank || !trims) continue;

      std::vector<int64_t> new_pads = pads, kernel_shape;
      for (size_t d = 0; d < rank; ++d) {
        new_pads[d] -= ranges[d].first * dilations[d];
        new_pads[d + rank] -= (ws[d + 2] - 1 - ranges[d].last) * dilations[d];
        kernel_shape.push_back(ranges[d].last - ranges[d].first + 1);
      }
      Attributes attrs = a;
      attrs.set("pads", new_pads);
      if (attrs.has("kernel_shape")) attrs.set("kernel_shape", kernel_shape);
      std::vector<Value *> inputs = node->inputs();
      inputs[1] = graph.add_constant(graph.fresh_name(w->name() + "_trimmed"),
                                     slice_taps(w->constant(), ranges));
      Value *trimmed = graph.add_op(op, inputs, attrs, graph.fresh_name(node->name()));
      if (!rewire_uses(graph, node->output(), trimmed)) {
        graph.remove_node(trimmed->producer());
        continue;
      }
      ctx.note(op, " '", node->name(), "': taps that read only padding dropped, kernel ",
               Shape(std::vector<int64_t>(ws.dims().begin() + 2, ws.dims().end())).to_string(),
               " -> ", Shape(kernel_shape).to_string());
      remove_if_dead(graph, node);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_trim_conv_taps() {
  return std::make_unique<TrimConvTaps>();
}

}  // namespace lumen
