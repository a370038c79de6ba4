// Reference quantization kernels (see src/graph/ops/quantize.cc for the semantics). Integer
// products are accumulated exactly in int64; rounding is half to even (std::nearbyint in the
// default rounding mode), as ONNX specifies; results saturate to the output type.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/matmul_plan.h"
#include "backends/common/narrow_types.h"
#include "backends/common/quantize_element.h"
#include "backends/common/requantize.h"
#include "core/kernel.h"
#include "core/scalar.h"

namespace lumen {
namespace {

// Element i of a narrow (float8, float4, int4, int2) tensor as double.
double load_narrow(const Tensor &t, int64_t i) {
  return narrow::load(t.dtype(), static_cast<const uint8_t *>(t.raw_data())[i]).as_double();
}

// Element i of any numeric tensor as double.
double load_double(const Tensor &t, int64_t i) {
  return is_narrow(t.dtype()) ? load_narrow(t, i) : scalar::value_as_double(t, i);
}

int64_t load_int(const Tensor &t, int64_t i) {
  return static_cast<int64_t>(load_double(t, i));
}

using quant::saturate_round;

// Maps element i of x to the element of its scale / zero point (per tensor, axis or block).
struct ParamIndex {
  int64_t inner = 1, dim = 1, pdim = 1, block = 0;
  bool scalar = true;
  ParamIndex(const KernelContext &ctx, const Shape &x, const Shape &p) {
    scalar = p.numel() == 1 && p.rank() <= 1;
    if (scalar) return;
    const size_t axis = x.normalize_axis(ctx.attrs.get_int("axis", 1));
    block = ctx.attrs.get_int("block_size", 0);
    dim = x[axis];
    for (size_t d = axis + 1; d < x.rank(); ++d) inner *= x[d];
    pdim = block > 0 ? (dim + block - 1) / block : dim;
    if (block > 0 ? p.numel() != x.numel() / std::max<int64_t>(dim, 1) * pdim : p.numel() != dim)
      ctx.fail("scale of shape ", p.to_string(), " does not fit input ", x.to_string());
  }
  int64_t operator()(int64_t i) const {
    if (scalar) return 0;
    const int64_t a = (i / inner) % dim;
    if (block == 0) return a;
    const int64_t outer = i / inner / dim;
    return (outer * pdim + a / block) * inner + i % inner;
  }
};

template <class T>
void quantize_linear(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &s = ctx.input(1);
  const Tensor *z = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor &y = ctx.output(0);
  const ParamIndex index(ctx, x.shape(), s.shape());
  const T *px = x.data<T>();
  // Element i's x / scale and zero point.
  const auto element = [&](int64_t i, double &zero) {
    const int64_t p = index(i);
    zero = z ? load_double(*z, p) : 0.0;
    return quant::scaled(px[i], load_double(s, p), s.dtype());
  };
  bool done = false;
  auto run = [&](auto q) {
    using Q = decltype(q);
    Q *py = y.data<Q>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      double zero;
      const double scaled = element(i, zero);
      py[i] = saturate_round<Q>(std::nearbyint(scaled) + zero);
    }
    done = true;
  };
  switch (y.dtype()) {
    case DType::UInt8:
      run(uint8_t{});
      break;
    case DType::Int8:
      run(int8_t{});
      break;
    case DType::UInt16:
      run(uint16_t{});
      break;
    case DType::Int16:
      run(int16_t{});
      break;
    default:
      break;
  }
  if (!done && is_narrow(y.dtype()) && y.dtype() != DType::Float8E8M0) {
    const bool saturate = ctx.attrs.get_int("saturate", 1) != 0;
    uint8_t *py = static_cast<uint8_t *>(y.raw_data());
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      double zero;
      const double scaled = element(i, zero);
      py[i] = quant::to_narrow(y.dtype(), scaled, zero, saturate);
    }
    done = true;
  }
  if (!done) ctx.fail("output dtype ", dtype_name(y.dtype()), " is not supported");
}

// Dequantizes narrow (float8, float4, int4, int2) x: (x - zero point) * scale in float32.
void dequantize_narrow(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &s = ctx.input(1);
  const Tensor *z = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor &y = ctx.output(0);
  const ParamIndex index(ctx, x.shape(), s.shape());
  bool done = false;
  bin::visit_dtype(y.dtype(), [&](auto o) {
    using O = decltype(o);
    if constexpr (std::is_floating_point_v<bin::Compute<O>>) {
      O *py = y.data<O>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) {
        const int64_t p = index(i);
        py[i] = quant::dequantized<O>(static_cast<float>(load_narrow(x, i)),
                                      z ? load_double(*z, p) : 0.0, load_double(s, p));
      }
      done = true;
    }
  });
  if (!done) ctx.fail("output dtype ", dtype_name(y.dtype()), " is not supported");
}

template <class Q>
void dequantize_linear(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &s = ctx.input(1);
  const Tensor *z = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor &y = ctx.output(0);
  const ParamIndex index(ctx, x.shape(), s.shape());
  const Q *px = x.data<Q>();
  bool done = false;
  bin::visit_dtype(y.dtype(), [&](auto o) {
    using O = decltype(o);
    if constexpr (std::is_floating_point_v<bin::Compute<O>>) {
      O *py = y.data<O>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) {
        const int64_t p = index(i);
        py[i] = quant::dequantized<O>(static_cast<float>(px[i]), z ? load_double(*z, p) : 0.0,
                                      load_double(s, p));
      }
      done = true;
    }
  });
  if (!done) ctx.fail("output dtype ", dtype_name(y.dtype()), " is not supported");
}

void dynamic_quantize_linear(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const float *px = x.data<float>();
  const int64_t n = x.numel();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(px[i])) ctx.fail("input contains NaN");
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zp = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  uint8_t *py = ctx.output(0).data<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    py[i] = saturate_round<uint8_t>(double(std::nearbyint(px[i] / scale)) + zp);
  ctx.output(1).data<float>()[0] = scale;
  ctx.output(2).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

// Batched integer matmul: C[t, i, j] = sum_k (A - a_zp[i]) * (B - b_zp[j]) with NumPy
// broadcasting of the batch dims. Writes int64 results into `out` (row-major output shape).
void integer_matmul(const KernelContext &ctx, const Tensor &a, const Tensor *a_zp, const Tensor &b,
                    const Tensor *b_zp, const Shape &out_shape, std::vector<int64_t> &out) {
  const MatmulPlan plan = plan_matmul(ctx, a.shape(), b.shape());
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  const auto count = static_cast<int64_t>(plan.a.size());
  out.assign(static_cast<size_t>(out_shape.numel()), 0);
  if (static_cast<int64_t>(out.size()) != checked_mul(count, checked_mul(m, n)))
    ctx.fail("output shape ", out_shape.to_string(), " does not match the operands");
  auto zp = [](const Tensor *t, int64_t i) -> int64_t {
    if (!t) return 0;
    return load_int(*t, t->numel() == 1 ? 0 : i);
  };
  for (int64_t t = 0; t < count; ++t) {
    const int64_t oa = plan.a[t], ob = plan.b[t];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (load_int(a, (oa * m + i) * k + p) - zp(a_zp, i)) *
                 (load_int(b, (ob * k + p) * n + j) - zp(b_zp, j));
        out[static_cast<size_t>((t * m + i) * n + j)] = acc;
      }
  }
}

int32_t to_int32(const KernelContext &ctx, int64_t v) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    ctx.fail("int32 accumulator overflow");
  return static_cast<int32_t>(v);
}

void matmul_integer(KernelContext &ctx) {
  std::vector<int64_t> acc;
  integer_matmul(ctx, ctx.input(0), ctx.has_input(2) ? &ctx.input(2) : nullptr, ctx.input(1),
                 ctx.has_input(3) ? &ctx.input(3) : nullptr, ctx.output(0).shape(), acc);
  int32_t *py = ctx.output(0).data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) py[i] = to_int32(ctx, acc[i]);
}

// 2-D NCHW integer convolution: sum (x - x_zp) * (w - w_zp[m]) (+ bias[m]), exact in int64.
void integer_conv2d(const KernelContext &ctx, const Tensor &x, const Tensor *x_zp, const Tensor &w,
                    const Tensor *w_zp, const Tensor *bias, const Shape &os,
                    std::vector<int64_t> &out) {
  const Shape &xs = x.shape(), &ws = w.shape();
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto dil = ctx.attrs.get_ints("dilations", {1, 1});
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const int64_t group = ctx.attrs.get_int("group", 1);
  const int64_t batch = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const int64_t mo = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  const int64_t oh = os[2], ow = os[3];
  if (os.rank() != 4 || os[1] != mo || c != cg * group || mo % group != 0)
    ctx.fail("shapes do not match: x ", xs.to_string(), ", w ", ws.to_string());
  const int64_t xz = x_zp ? load_int(*x_zp, 0) : 0;
  const int64_t mg = mo / group;
  out.assign(static_cast<size_t>(os.numel()), 0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t m = 0; m < mo; ++m) {
      const int64_t g = m / mg;
      const int64_t wz = w_zp ? load_int(*w_zp, w_zp->numel() == 1 ? 0 : m) : 0;
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t acc = bias ? load_int(*bias, m) : 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t u = 0; u < kh; ++u) {
              const int64_t yy = i * strides[0] - pads[0] + u * dil[0];
              if (yy < 0 || yy >= h) continue;
              for (int64_t v = 0; v < kw; ++v) {
                const int64_t xx = j * strides[1] - pads[1] + v * dil[1];
                if (xx < 0 || xx >= wd) continue;
                const int64_t xv = load_int(x, ((b * c + g * cg + ci) * h + yy) * wd + xx) - xz;
                const int64_t wv = load_int(w, ((m * cg + ci) * kh + u) * kw + v) - wz;
                acc += xv * wv;
              }
            }
          out[static_cast<size_t>(((b * mo + m) * oh + i) * ow + j)] = acc;
        }
    }
}

void conv_integer(KernelContext &ctx) {
  std::vector<int64_t> acc;
  integer_conv2d(ctx, ctx.input(0), ctx.has_input(2) ? &ctx.input(2) : nullptr, ctx.input(1),
                 ctx.has_input(3) ? &ctx.input(3) : nullptr, nullptr, ctx.output(0).shape(), acc);
  int32_t *py = ctx.output(0).data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) py[i] = to_int32(ctx, acc[i]);
}

// Requantizes int64 accumulators to the output: round_half_even(acc * multiplier + y_zp).
// `channel` maps an output index to the index of the per-channel w_scale.
template <class F>
void requantize(KernelContext &ctx, const std::vector<int64_t> &acc, const Tensor &x_scale,
                const Tensor &w_scale, F channel) {
  const Tensor &y_scale = ctx.input(6), &y_zp = ctx.input(7);
  Tensor &y = ctx.output(0);
  const double zp = load_double(y_zp, 0);
  std::vector<double> mult(static_cast<size_t>(w_scale.numel()));
  for (int64_t i = 0; i < w_scale.numel(); ++i)
    mult[static_cast<size_t>(i)] = requant_multiplier(x_scale, load_double(w_scale, i), y_scale);
  auto run = [&](auto q) {
    using Q = decltype(q);
    Q *py = y.data<Q>();
    for (size_t i = 0; i < acc.size(); ++i) {
      const size_t c = w_scale.numel() == 1 ? 0 : static_cast<size_t>(channel(int64_t(i)));
      py[i] = saturate_round<Q>(double(acc[i]) * mult[c] + zp);
    }
  };
  if (y.dtype() == DType::UInt8)
    run(uint8_t{});
  else if (y.dtype() == DType::Int8)
    run(int8_t{});
  else
    ctx.fail("output dtype ", dtype_name(y.dtype()), " is not supported");
}

void qlinear_matmul(KernelContext &ctx) {
  std::vector<int64_t> acc;
  const Shape &os = ctx.output(0).shape();
  integer_matmul(ctx, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5), os, acc);
  const int64_t n = os.rank() >= 1 && ctx.input(3).shape().rank() >= 2 ? os[os.rank() - 1] : 1;
  requantize(ctx, acc, ctx.input(1), ctx.input(4), [n](int64_t i) { return i % n; });
}

void qlinear_conv(KernelContext &ctx) {
  std::vector<int64_t> acc;
  const Shape &os = ctx.output(0).shape();
  integer_conv2d(ctx, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5),
                 ctx.has_input(8) ? &ctx.input(8) : nullptr, os, acc);
  const int64_t plane = os[2] * os[3], mo = os[1];
  requantize(ctx, acc, ctx.input(1), ctx.input(4),
             [plane, mo](int64_t i) { return (i / std::max<int64_t>(plane, 1)) % mo; });
}

LUMEN_REGISTER_KERNEL("reference", "quantize_linear", quantize_linear<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "quantize_linear", quantize_linear<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "quantize_linear", quantize_linear<Float16>, DType::Float16);
LUMEN_REGISTER_KERNEL("reference", "quantize_linear", quantize_linear<BFloat16>, DType::BFloat16);
LUMEN_REGISTER_KERNEL("reference", "dequantize_linear", dequantize_linear<uint8_t>, DType::UInt8);
LUMEN_REGISTER_KERNEL("reference", "dequantize_linear", dequantize_linear<int8_t>, DType::Int8);
LUMEN_REGISTER_KERNEL("reference", "dequantize_linear", dequantize_linear<uint16_t>, DType::UInt16);
LUMEN_REGISTER_KERNEL("reference", "dequantize_linear", dequantize_linear<int16_t>, DType::Int16);
LUMEN_REGISTER_KERNEL("reference", "dequantize_linear", dequantize_linear<int32_t>, DType::Int32);
LUMEN_REGISTER_KERNEL("reference", "dequantize_linear", dequantize_narrow, DType::Float8E4M3FN,
                      DType::Float8E4M3FNUZ, DType::Float8E5M2, DType::Float8E5M2FNUZ, DType::UInt4,
                      DType::Int4, DType::Float4E2M1, DType::UInt2, DType::Int2);
LUMEN_REGISTER_KERNEL("reference", "dynamic_quantize_linear", dynamic_quantize_linear,
                      DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "matmul_integer", matmul_integer, DType::UInt8, DType::Int8);
LUMEN_REGISTER_KERNEL("reference", "conv_integer", conv_integer, DType::UInt8, DType::Int8);
LUMEN_REGISTER_KERNEL("reference", "qlinear_matmul", qlinear_matmul, DType::UInt8, DType::Int8);
LUMEN_REGISTER_KERNEL("reference", "qlinear_conv", qlinear_conv, DType::UInt8, DType::Int8);

}  // namespace
}  // namespace lumen
