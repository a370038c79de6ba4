// Recurrent ops with ONNX semantics: "rnn", "gru", "lstm".
// Inputs: X, W, R, B?, sequence_lens?, initial_h?, (lstm: initial_c?, P?).
// Outputs: Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]), Y_h
// [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]), and for lstm Y_c like Y_h.
// Attributes as ONNX: hidden_size, direction (forward|reverse|bidirectional), activations,
// activation_alpha, activation_beta, clip, layout, linear_before_reset (gru).
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

int64_t gates_of(std::string_view op) {
  return op == "lstm" ? 4 : op == "gru" ? 3 : 1;
}

std::vector<TensorType> infer_recurrent(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &w = ctx.input(1), &r = ctx.input(2);
  if (!computes_in_float(x.dtype))
    ctx.fail("expected a float16, bfloat16, float32 or float64 input, got ", dtype_name(x.dtype));
  const std::string direction = ctx.attrs.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.fail("direction must be forward, reverse or bidirectional, got '", direction, "'");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = ctx.attrs.get_int("layout", 0);
  if (layout != 0 && layout != 1) ctx.fail("layout must be 0 or 1, got ", layout);
  if (x.shape.rank() != 3) ctx.fail("X must be 3-D, got ", x.shape.to_string());
  if (w.shape.rank() != 3 || r.shape.rank() != 3)
    ctx.fail("W and R must be 3-D, got ", w.shape.to_string(), " and ", r.shape.to_string());
  const int64_t g = gates_of(ctx.op);
  int64_t hidden = ctx.attrs.get_int("hidden_size", kUnknownDim);
  if (hidden == kUnknownDim && r.shape[2] != kUnknownDim) hidden = r.shape[2];
  if (hidden < 1 && hidden != kUnknownDim) ctx.fail("hidden_size must be >= 1, got ", hidden);
  const int64_t seq = layout == 0 ? x.shape[0] : x.shape[1];
  const int64_t batch = layout == 0 ? x.shape[1] : x.shape[0];
  const int64_t input = x.shape[2];
  auto expect = [&](const TensorType &t, const std::vector<int64_t> &dims, const char *what) {
    bool ok = t.shape.rank() == dims.size();
    for (size_t i = 0; ok && i < dims.size(); ++i)
      ok = t.shape[i] == dims[i] || t.shape[i] == kUnknownDim || dims[i] == kUnknownDim;
    if (!ok)
      ctx.fail(what, " has shape ", t.shape.to_string(), ", expected ", Shape(dims).to_string(),
               " (X ", x.shape.to_string(), ", hidden_size ", hidden, ", ", dirs, " direction(s))");
    if (t.dtype != x.dtype && std::string_view(what) != "sequence_lens")
      ctx.fail(what, " must have X's dtype ", dtype_name(x.dtype), ", got ", dtype_name(t.dtype));
  };
  const int64_t gh = hidden == kUnknownDim ? kUnknownDim : checked_mul(g, hidden);
  expect(w, {dirs, gh, input}, "W");
  expect(r, {dirs, gh, hidden}, "R");
  if (ctx.has_input(3))
    expect(ctx.input(3), {dirs, gh == kUnknownDim ? gh : checked_mul(gh, int64_t{2})}, "B");
  if (ctx.has_input(4)) {
    expect(ctx.input(4), {batch}, "sequence_lens");
    if (ctx.input(4).dtype != DType::Int32 && ctx.input(4).dtype != DType::Int64)
      ctx.fail("sequence_lens must be int32, got ", dtype_name(ctx.input(4).dtype));
  }
  const std::vector<int64_t> state = layout == 0 ? std::vector<int64_t>{dirs, batch, hidden}
                                                 : std::vector<int64_t>{batch, dirs, hidden};
  if (ctx.has_input(5)) expect(ctx.input(5), state, "initial_h");
  if (ctx.op == "lstm") {
    if (ctx.has_input(6)) expect(ctx.input(6), state, "initial_c");
    if (ctx.has_input(7))
      expect(ctx.input(7), {dirs, hidden == kUnknownDim ? hidden : 3 * hidden}, "P");
  }
  const Shape y = layout == 0 ? Shape{seq, dirs, batch, hidden} : Shape{batch, seq, dirs, hidden};
  std::vector<TensorType> out{{x.dtype, y}, {x.dtype, Shape(state)}};
  if (ctx.op == "lstm") out.push_back({x.dtype, Shape(state)});
  return out;
}

LUMEN_REGISTER_OP(
    {.name = "rnn", .min_inputs = 3, .max_inputs = 6, .num_outputs = 2, .infer = infer_recurrent});
LUMEN_REGISTER_OP(
    {.name = "gru", .min_inputs = 3, .max_inputs = 6, .num_outputs = 2, .infer = infer_recurrent});
LUMEN_REGISTER_OP(
    {.name = "lstm", .min_inputs = 3, .max_inputs = 8, .num_outputs = 3, .infer = infer_recurrent});

}  // namespace
}  // namespace lumen
