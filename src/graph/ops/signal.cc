// Signal processing ops, ONNX semantics. Complex tensors are real tensors whose last dim is 2
// (real, imaginary); a last dim of 1 is a real signal.
//   dft (DFT): x [..., 1 or 2], dft_length (optional int scalar), axis (optional int scalar input,
//     overriding attr axis=-2; counts the last dim for negative values, must not name it); attrs
//     inverse=0, onesided=0. Length n along axis defaults to x's (2*(len-1) for an inverse
//     onesided DFT); the signal is truncated or zero-padded to n. Forward: [..., n or n/2+1, ...,
//     2]; inverse onesided (irfft): [..., n, ..., 1]; inverse: [..., n, ..., 2] (scaled by 1/n).
//   stft (STFT): signal [B, L, 1 or 2], frame_step (int scalar), window [W] (optional),
//     frame_length (optional int scalar); attr onesided=1. Output [B, frames, bins, 2] with
//     frames = 1 + (L - W) / frame_step, bins = W/2+1 when onesided else W.
//   hann_window / hamming_window / blackman_window: size (int scalar); attrs periodic=1,
//     output_datatype (a Lumen dtype name, default float32). Output [size].
//   mel_weight_matrix (MelWeightMatrix): num_mel_bins, dft_length, sample_rate (int scalars),
//     lower_edge_hertz, upper_edge_hertz (float scalars); attr output_datatype (dtype name, default
//     float32). Output [dft_length/2+1, num_mel_bins].
#include <optional>
#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace lumen {
namespace {

bool known(int64_t d) {
  return d != kUnknownDim;
}

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}

bool is_int(DType t) {
  return t == DType::Int32 || t == DType::Int64;
}

void check_scalar_int(const InferContext &ctx, size_t i, const char *what) {
  const TensorType &t = ctx.input(i);
  if (!is_int(t.dtype)) ctx.fail(what, " must be int32 or int64, got ", dtype_name(t.dtype));
  if (t.shape.rank() > 1 || (t.shape.rank() == 1 && known(t.shape[0]) && t.shape[0] != 1))
    ctx.fail(what, " must be a scalar, got shape ", t.shape.to_string());
}

// The scalar int input i, or nullopt when not known yet.
std::optional<int64_t> scalar_int(const InferContext &ctx, size_t i) {
  const auto v = ctx.int_values(i);
  if (!v) return std::nullopt;
  if (v->size() != 1) ctx.fail("input ", i, " must hold one value, got ", v->size());
  return (*v)[0];
}

DType output_dtype(const InferContext &ctx) {
  const DType dt = dtype_from_name(ctx.attrs.get_string("output_datatype", "float32"));
  if (!is_float(dt))
    ctx.fail("output_datatype ", dtype_name(dt), " is not supported (floating point only)");
  return dt;
}

std::vector<TensorType> infer_dft(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!is_float(x.dtype))
    ctx.fail("input dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  const size_t rank = x.shape.rank();
  if (rank < 2) ctx.fail("input must have rank >= 2, got ", x.shape.to_string());
  const int64_t last = x.shape[rank - 1];
  if (known(last) && last != 1 && last != 2)
    ctx.fail("input's last dim must be 1 (real) or 2 (complex), got ", x.shape.to_string());
  const bool inverse = ctx.attrs.get_int("inverse", 0) != 0;
  const bool onesided = ctx.attrs.get_int("onesided", 0) != 0;
  int64_t axis = ctx.attrs.get_int("axis", -2);
  std::vector<DType> dts{x.dtype};
  if (ctx.has_input(2)) {
    check_scalar_int(ctx, 2, "axis");
    const auto a = scalar_int(ctx, 2);
    if (!a) ctx.defer(dts);
    axis = *a;
  }
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r - 1 || (axis < 0 && axis + r == r - 1))
    ctx.fail("axis ", axis, " is out of range for input ", x.shape.to_string(),
             " (the last dim holds the complex parts)");
  if (axis < 0) axis += r;
  const int64_t len = x.shape[static_cast<size_t>(axis)];
  int64_t n = kUnknownDim;
  if (ctx.has_input(1)) {
    check_scalar_int(ctx, 1, "dft_length");
    const auto v = scalar_int(ctx, 1);
    if (!v) ctx.defer(dts);
    n = *v;
  } else if (known(len)) {
    n = inverse && onesided ? 2 * (len - 1) : len;
  }
  if (known(n) && n < 1) ctx.fail("dft_length must be positive, got ", n);
  Shape out = x.shape;
  out[static_cast<size_t>(axis)] = !known(n) ? kUnknownDim : (!inverse && onesided ? n / 2 + 1 : n);
  out[rank - 1] = inverse && onesided ? 1 : 2;
  return {{x.dtype, out}};
}

LUMEN_REGISTER_OP({.name = "dft", .min_inputs = 1, .max_inputs = 3, .infer = infer_dft});

std::vector<TensorType> infer_stft(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!is_float(x.dtype))
    ctx.fail("signal dtype ", dtype_name(x.dtype), " is not supported (floating point only)");
  if (x.shape.rank() != 3 || (known(x.shape[2]) && x.shape[2] != 1 && x.shape[2] != 2))
    ctx.fail("signal must have shape [batch, length, 1 or 2], got ", x.shape.to_string());
  check_scalar_int(ctx, 1, "frame_step");
  const std::vector<DType> dts{x.dtype};
  int64_t frame = kUnknownDim;
  if (ctx.has_input(2)) {
    const TensorType &w = ctx.input(2);
    if (w.shape.rank() != 1) ctx.fail("window must have rank 1, got ", w.shape.to_string());
    if (!is_float(w.dtype)) ctx.fail("window dtype ", dtype_name(w.dtype), " is not supported");
    frame = w.shape[0];
  }
  if (ctx.has_input(3)) {
    check_scalar_int(ctx, 3, "frame_length");
    const auto v = scalar_int(ctx, 3);
    if (!v) ctx.defer(dts);
    if (known(frame) && *v != frame)
      ctx.fail("frame_length ", *v, " differs from the window length ", frame);
    frame = *v;
  }
  if (!ctx.has_input(2) && !ctx.has_input(3)) frame = x.shape[1];
  const auto step = scalar_int(ctx, 1);
  if (!step || !known(frame) || !known(x.shape[1])) ctx.defer(dts);
  if (*step < 1) ctx.fail("frame_step must be positive, got ", *step);
  if (frame < 1 || frame > x.shape[1])
    ctx.fail("frame length ", frame, " must be in [1, ", x.shape[1], "] (signal ",
             x.shape.to_string(), ")");
  const int64_t frames = 1 + (x.shape[1] - frame) / *step;
  const bool onesided = ctx.attrs.get_int("onesided", 1) != 0;
  return {{x.dtype, Shape{x.shape[0], frames, onesided ? frame / 2 + 1 : frame, 2}}};
}

LUMEN_REGISTER_OP({.name = "stft", .min_inputs = 2, .max_inputs = 4, .infer = infer_stft});

std::vector<TensorType> infer_window(const InferContext &ctx) {
  check_scalar_int(ctx, 0, "size");
  const DType dt = output_dtype(ctx);
  const auto size = scalar_int(ctx, 0);
  if (!size) ctx.defer({dt});
  if (*size < 0) ctx.fail("size must not be negative, got ", *size);
  return {{dt, Shape{*size}}};
}

LUMEN_REGISTER_OP({.name = "hann_window", .infer = infer_window});
LUMEN_REGISTER_OP({.name = "hamming_window", .infer = infer_window});
LUMEN_REGISTER_OP({.name = "blackman_window", .infer = infer_window});

std::vector<TensorType> infer_mel(const InferContext &ctx) {
  check_scalar_int(ctx, 0, "num_mel_bins");
  check_scalar_int(ctx, 1, "dft_length");
  check_scalar_int(ctx, 2, "sample_rate");
  for (size_t i = 3; i < 5; ++i)
    if (!is_float(ctx.input(i).dtype) || ctx.input(i).shape.rank() > 1)
      ctx.fail(i == 3 ? "lower_edge_hertz" : "upper_edge_hertz",
               " must be a floating point scalar, got ", dtype_name(ctx.input(i).dtype), " ",
               ctx.input(i).shape.to_string());
  const DType dt = output_dtype(ctx);
  const auto bins = scalar_int(ctx, 0), n = scalar_int(ctx, 1), rate = scalar_int(ctx, 2);
  if (!bins || !n || !rate) ctx.defer({dt});
  if (*bins < 1 || *n < 1 || *rate < 1)
    ctx.fail("num_mel_bins (", *bins, "), dft_length (", *n, ") and sample_rate (", *rate,
             ") must be positive");
  return {{dt, Shape{*n / 2 + 1, *bins}}};
}

LUMEN_REGISTER_OP(
    {.name = "mel_weight_matrix", .min_inputs = 5, .max_inputs = 5, .infer = infer_mel});

}  // namespace
}  // namespace lumen
