// ONNX Resize (opsets 10-19) and Upsample (7-9) onto Lumen's "resize" op. Resize-11+ passes
// X, roi, scales and sizes through as inputs (read at run time) with the attributes unchanged.
// Resize-10 and Upsample behave like Resize-11 with asymmetric coordinates and floor rounding.
#include <string>
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

Attributes resize_attrs(NodeContext &ctx) {
  Attributes attrs;
  for (const char *name :
       {"mode", "coordinate_transformation_mode", "nearest_mode", "keep_aspect_ratio_policy"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_string(name, ""));
  for (const char *name : {"cubic_coeff_a", "extrapolation_value"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_float(name, 0.0));
  for (const char *name : {"exclude_outside", "antialias"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_int(name, 0));
  if (ctx.attrs().has("axes")) attrs.set("axes", ctx.attrs().get_ints("axes", {}));
  return attrs;
}

std::vector<Value *> convert_resize(NodeContext &ctx) {
  Attributes attrs = resize_attrs(ctx);
  std::vector<Value *> inputs{ctx.input(0)};
  if (ctx.opset() < 11) {
    // Resize-10: X, scales.
    attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
    attrs.set("nearest_mode", std::string("floor"));
    inputs.push_back(nullptr);
    inputs.push_back(ctx.input(1));
  } else {
    for (size_t i = 1; i < 4 && i < ctx.num_inputs(); ++i)
      inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  }
  while (inputs.size() > 1 && !inputs.back()) inputs.pop_back();
  return {ctx.emit("resize", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Resize", 10, convert_resize);

std::vector<Value *> convert_upsample(NodeContext &ctx) {
  Attributes attrs;
  attrs.set("mode", ctx.attrs().get_string("mode", "nearest"));
  attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
  attrs.set("nearest_mode", std::string("floor"));
  Value *scales = nullptr;
  if (ctx.opset() >= 9) {
    scales = ctx.input(1);
  } else {
    const auto s = ctx.attrs().get_floats("scales", {});
    if (s.empty()) ctx.fail("attribute 'scales' is required");
    std::vector<float> f(s.begin(), s.end());
    scales = ctx.constant(Tensor::from_vector<float>({int64_t(f.size())}, f));
  }
  return {ctx.emit("resize", {ctx.input(0), nullptr, scales}, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("Upsample", 7, convert_upsample);

}  // namespace
}  // namespace lumen::onnx_import
