// ONNX signal processing ops: DFT (opsets 17 and 20), STFT, HannWindow, HammingWindow,
// BlackmanWindow and MelWeightMatrix (opset 17) onto Lumen's dft, stft, *_window and
// mel_weight_matrix. Tensor inputs (dft_length, axis, frame_step, ...) stay inputs, read at run
// time; output_datatype becomes a Lumen dtype name.
#include <string>
#include <vector>

#include "onnx/converters/util.h"
#include "onnx/tensor_proto.h"

namespace lumen::onnx_import {
namespace {

std::vector<Value *> optional_inputs(NodeContext &ctx, size_t max_inputs) {
  if (ctx.num_inputs() > max_inputs)
    ctx.fail("expected at most ", max_inputs, " inputs, got ", ctx.num_inputs());
  std::vector<Value *> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    inputs.push_back(ctx.has_input(i) ? ctx.input(i) : nullptr);
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  return inputs;
}

std::vector<Value *> convert_dft(NodeContext &ctx) {
  Attributes attrs{{"inverse", ctx.attrs().get_int("inverse", 0)},
                   {"onesided", ctx.attrs().get_int("onesided", 0)}};
  std::vector<Value *> inputs;
  if (ctx.opset() < 20) {
    // DFT-17: axis is an attribute (default 1), counting dims of the input itself.
    inputs = optional_inputs(ctx, 2);
    attrs.set("axis", ctx.attrs().get_int("axis", 1));
  } else {
    inputs = optional_inputs(ctx, 3);
    attrs.set("axis", int64_t(-2));
  }
  return {ctx.emit("dft", inputs, attrs)};
}
LUMEN_REGISTER_ONNX_CONVERTER("DFT", 17, convert_dft);

std::vector<Value *> convert_stft(NodeContext &ctx) {
  return {ctx.emit("stft", optional_inputs(ctx, 4),
                   {{"onesided", ctx.attrs().get_int("onesided", 1)}})};
}
LUMEN_REGISTER_ONNX_CONVERTER("STFT", 17, convert_stft);

Attributes window_attrs(NodeContext &ctx, bool periodic) {
  Attributes attrs{
      {"output_datatype",
       std::string(dtype_name(dtype_from_onnx(
           static_cast<int>(ctx.attrs().get_int("output_datatype", 1)), "output_datatype")))}};
  if (periodic) attrs.set("periodic", ctx.attrs().get_int("periodic", 1));
  return attrs;
}

Converter window_op(const std::string &op) {
  return [op](NodeContext &ctx) -> std::vector<Value *> {
    return {ctx.emit(op, {ctx.input(0)}, window_attrs(ctx, true))};
  };
}
LUMEN_REGISTER_ONNX_CONVERTER("HannWindow", 17, window_op("hann_window"));
LUMEN_REGISTER_ONNX_CONVERTER("HammingWindow", 17, window_op("hamming_window"));
LUMEN_REGISTER_ONNX_CONVERTER("BlackmanWindow", 17, window_op("blackman_window"));

std::vector<Value *> convert_mel(NodeContext &ctx) {
  return {ctx.emit("mel_weight_matrix",
                   {ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4)},
                   window_attrs(ctx, false))};
}
LUMEN_REGISTER_ONNX_CONVERTER("MelWeightMatrix", 17, convert_mel);

}  // namespace
}  // namespace lumen::onnx_import
