#include "onnx/converters/util.h"

#include "lumen/ops.h"

namespace lumen::onnx_import {

Converter same_op(const std::string &op) {
  return [op](NodeContext &ctx) -> std::vector<Value *> {
    std::vector<Value *> inputs;
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
    return {ctx.emit(op, inputs, ctx.attrs())};
  };
}

const Shape &static_shape(NodeContext &ctx, Value *v, const char *what) {
  if (!v->has_shape() || !v->shape().is_static())
    ctx.fail(what, " '", v->name(), "' needs a static shape here (dims known at load time)");
  return v->shape();
}

std::vector<int64_t> resolve_pads(NodeContext &ctx, const Shape &input,
                                  const std::vector<int64_t> &kernel,
                                  const std::vector<int64_t> &strides,
                                  const std::vector<int64_t> &dilations) {
  const size_t spatial = kernel.size();
  const std::string auto_pad = ctx.attrs().get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = ctx.attrs().get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial)
      ctx.fail("pads has ", pads.size(), " values, expected ", 2 * spatial);
    return pads;
  }
  if (auto_pad == "VALID") return std::vector<int64_t>(2 * spatial, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    ctx.fail("unknown auto_pad '", auto_pad, "'");
  if (input.rank() != spatial + 2 || !input.is_static())
    ctx.fail("auto_pad ", auto_pad, " needs the input's spatial size at load time, got ",
             input.to_string());
  std::vector<int64_t> pads(2 * spatial);
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = input[i + 2];
    const int64_t out = (in + strides[i] - 1) / strides[i];
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + extent - in);
    const int64_t small = total / 2, large = total - small;
    pads[i] = auto_pad == "SAME_UPPER" ? small : large;
    pads[i + spatial] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

Value *emit_folded(NodeContext &ctx, const std::string &op, const std::vector<Value *> &inputs,
                   const Attributes &attrs, size_t index) {
  constexpr int64_t kFoldLimit = 4096;  // elements; larger constants are left to the passes
  std::vector<Tensor> tensors;
  for (Value *v : inputs) {
    if (v && (!v->is_constant() || v->constant().numel() > kFoldLimit))
      return ctx.emit(op, inputs, attrs, index);
    tensors.push_back(v ? v->constant() : Tensor());
  }
  if (tensors.empty()) return ctx.emit(op, inputs, attrs, index);
  std::vector<Tensor> out = call_op(op, tensors, attrs);
  if (out.size() != 1 || out[0].numel() > kFoldLimit) return ctx.emit(op, inputs, attrs, index);
  return ctx.constant(std::move(out[0]), static_cast<int>(index));
}

}  // namespace lumen::onnx_import
