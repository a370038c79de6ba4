// ONNX GridSample (16: bilinear/bicubic/nearest on 4-D; 20: linear/cubic/nearest on N-d) onto
// Lumen's "grid_sample" op, with the mode names of opset 20.
#include <string>
#include <vector>

#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> convert_grid_sample(NodeContext &ctx) {
  Attributes attrs;
  std::string mode = ctx.attrs().get_string("mode", ctx.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  attrs.set("mode", mode);
  attrs.set("padding_mode", ctx.attrs().get_string("padding_mode", "zeros"));
  attrs.set("align_corners", ctx.attrs().get_int("align_corners", 0));
  return {ctx.emit("grid_sample", {ctx.input(0), ctx.input(1)}, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("GridSample", 16, convert_grid_sample);

// ONNX AffineGrid (20) onto Lumen's "affine_grid"; size passes through as an input.
std::vector<Value *> convert_affine_grid(NodeContext &ctx) {
  Attributes attrs;
  attrs.set("align_corners", ctx.attrs().get_int("align_corners", 0));
  return {ctx.emit("affine_grid", {ctx.input(0), ctx.input(1)}, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("AffineGrid", 20, convert_affine_grid);

// ONNX RoiAlign (10: no coordinate_transformation_mode, i.e. output_half_pixel; 16+: default
// half_pixel) onto Lumen's "roi_align".
std::vector<Value *> convert_roi_align(NodeContext &ctx) {
  Attributes attrs;
  attrs.set("mode", ctx.attrs().get_string("mode", "avg"));
  attrs.set("coordinate_transformation_mode",
            ctx.opset() < 16
                ? std::string("output_half_pixel")
                : ctx.attrs().get_string("coordinate_transformation_mode", "half_pixel"));
  attrs.set("output_height", ctx.attrs().get_int("output_height", 1));
  attrs.set("output_width", ctx.attrs().get_int("output_width", 1));
  attrs.set("sampling_ratio", ctx.attrs().get_int("sampling_ratio", 0));
  attrs.set("spatial_scale", ctx.attrs().get_float("spatial_scale", 1.0));
  return {ctx.emit("roi_align", {ctx.input(0), ctx.input(1), ctx.input(2)}, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("RoiAlign", 10, convert_roi_align);

// ONNX DeformConv (19+) onto Lumen's "deform_conv", attributes and inputs unchanged.
std::vector<Value *> convert_deform_conv(NodeContext &ctx) {
  Attributes attrs;
  for (const char *name : {"dilations", "kernel_shape", "pads", "strides"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_ints(name, {}));
  for (const char *name : {"group", "offset_group"})
    if (ctx.attrs().has(name)) attrs.set(name, ctx.attrs().get_int(name, 1));
  std::vector<Value *> inputs{ctx.input(0), ctx.input(1), ctx.input(2)};
  for (size_t i = 3; i < 5 && i < ctx.num_inputs(); ++i)
    inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  while (inputs.size() > 3 && !inputs.back()) inputs.pop_back();
  return {ctx.emit("deform_conv", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("DeformConv", 19, convert_deform_conv);

}  // namespace
}  // namespace lumen::onnx_import
