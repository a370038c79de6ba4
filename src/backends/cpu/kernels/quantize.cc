// CPU QuantizeLinear (float32/float64 to 8- and 16-bit integers) and DequantizeLinear (8-, 16- and
// 32-bit integers to float32/float64): the Q/DQ pairs of quantized (QDQ) models that stay in the
// graph around activations. Scale and zero point may be per tensor, per axis or per block; the
// input is walked as [outer, dim, inner] runs over which the parameters are constant (per tensor,
// per axis) or step with the run (per block), each run a vectorizable loop; runs are shared out
// over the pool. Arithmetic is the reference's (backends/reference/kernels/quantize.cc): x / scale
// in float32 unless either is float64, rounded half to even, plus the zero point, saturated, NaN
// to 0; (x - zero point) in float32 times the scale (rounded once to a float16/bfloat16 output).
// Float16/bfloat16 inputs, the narrow types (int4, int2, float8, float4) on either side and
// per-block parameters run element by element (backends/common/quantize_element.h), in parallel.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/narrow_types.h"
#include "backends/common/quantize_element.h"
#include "backends/cpu/kernels/quantize_f32.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 15;  // elements per parallel task, roughly

// The scale and zero point as double, and how element (outer, a, i) of x finds its pair.
struct QuantParams {
  std::vector<double> scale, zero;
  int64_t outer = 1, dim = 1, inner = 1, block = 0, pdim = 1;
  bool per_tensor = true;

  QuantParams(const KernelContext &ctx, const Shape &x) {
    const Tensor &s = ctx.input(1);
    const Tensor *z = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (z && z->numel() != s.numel())
      ctx.fail("zero point ", z->shape().to_string(), " does not match scale ",
               s.shape().to_string());
    scale.resize(static_cast<size_t>(s.numel()));
    zero.assign(scale.size(), 0.0);
    const auto load = [&](const Tensor &t, std::vector<double> &out) {
      if (is_narrow(t.dtype())) {  // a zero point of the narrow output's dtype
        const auto *bits = static_cast<const uint8_t *>(t.raw_data());
        for (size_t i = 0; i < out.size(); ++i)
          out[i] = narrow::load(t.dtype(), bits[i]).as_double();
        return;
      }
      if (!bin::visit_dtype(t.dtype(), [&](auto tag) {
            using T = decltype(tag);
            for (size_t i = 0; i < out.size(); ++i) out[i] = double(bin::load(t.data<T>()[i]));
          }))
        ctx.fail("unsupported parameter dtype ", dtype_name(t.dtype()));
    };
    load(s, scale);
    if (z) load(*z, zero);
    per_tensor = s.numel() == 1 && s.rank() <= 1;
    if (per_tensor) {
      inner = x.numel();
      return;
    }
    const size_t axis = x.normalize_axis(ctx.attrs.get_int("axis", 1));
    block = ctx.attrs.get_int("block_size", 0);
    dim = x[axis];
    for (size_t d = 0; d < axis; ++d) outer *= x[d];
    for (size_t d = axis + 1; d < x.rank(); ++d) inner *= x[d];
    pdim = block > 0 ? (dim + block - 1) / block : dim;
    if (block > 0 ? s.numel() != outer * pdim * inner : s.numel() != dim)
      ctx.fail("scale of shape ", s.shape().to_string(), " does not fit input ", x.to_string());
  }

  // Calls run(x offset, parameter offset, parameter step (0 or 1), length) for every run, in
  // parallel.
  template <class Run>
  void for_each_run(ThreadPool &pool, const Run &run) const {
    if (per_tensor)  // one run: split so that it is shared out too
      return pool.parallel_for(inner, kGrain, [&](int64_t b, int64_t e) { run(b, 0, 0, e - b); });
    pool.parallel_for(outer * dim, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner)),
                      [&](int64_t r0, int64_t r1) {
                        for (int64_t r = r0; r < r1; ++r) {
                          const int64_t o = r / dim, a = r % dim;
                          if (block > 0)
                            run(r * inner, (o * pdim + a / block) * inner, 1, inner);
                          else
                            run(r * inner, a, 0, inner);
                        }
                      });
  }
};

// round_half_even(x / scale) + zero point, saturated to Q, NaN to 0; per-tensor and per-axis runs
// of float32 in cpu::quantize_f32.
template <class T, class Q>
void quantize_run(const T *x, Q *y, const double *scale, const double *zero, int64_t step,
                  int64_t n, DType scale_dtype) {
  if constexpr (std::is_same_v<T, float>)
    if (step == 0 && scale_dtype != DType::Float64) {
      const float s = float(*scale), z = float(*zero);
      const float lo = float(std::numeric_limits<Q>::min()),
                  hi = float(std::numeric_limits<Q>::max());
      vec::run_best([&]() LUMEN_VEC_INLINE { cpu::quantize_f32(x, y, n, s, z, lo, hi); });
      return;
    }
  for (int64_t i = 0; i < n; ++i)
    y[i] = quant::saturate_round<Q>(
        std::nearbyint(quant::scaled(x[i], scale[i * step], scale_dtype)) + zero[i * step]);
}

template <class T>
void quantize_linear(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const DType q = y.dtype(), scale_dtype = ctx.input(1).dtype();
  if (q == DType::Float8E8M0) ctx.fail("output dtype ", dtype_name(q), " is not supported");
  const QuantParams p(ctx, x.shape());
  const T *px = x.data<T>();
  if (is_narrow(q)) {
    const bool saturate = ctx.attrs.get_int("saturate", 1) != 0;
    auto *py = static_cast<uint8_t *>(y.raw_data());
    p.for_each_run(ctx.pool, [&](int64_t at, int64_t param, int64_t step, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t k = param + i * step;
        py[at + i] = quant::to_narrow(q, quant::scaled(px[at + i], p.scale[size_t(k)], scale_dtype),
                                      p.zero[size_t(k)], saturate);
      }
    });
    return;
  }
  const auto go = [&](auto tag) {
    using Q = decltype(tag);
    Q *py = y.data<Q>();
    p.for_each_run(ctx.pool, [&](int64_t at, int64_t param, int64_t step, int64_t n) {
      quantize_run(px + at, py + at, p.scale.data() + param, p.zero.data() + param, step, n,
                   scale_dtype);
    });
  };
  switch (q) {
    case DType::UInt8:
      return go(uint8_t{});
    case DType::Int8:
      return go(int8_t{});
    case DType::UInt16:
      return go(uint16_t{});
    case DType::Int16:
      return go(int16_t{});
    default:
      ctx.fail("output dtype ", dtype_name(q), " is not supported");
  }
}

// x's values as float: the standard integer types as they are, the narrow types decoded.
template <class Q>
struct QuantizedInput {
  const Q *x;
  float operator()(int64_t i) const { return static_cast<float>(x[i]); }
};
struct NarrowInput {
  DType dtype;
  const uint8_t *bits;
  float operator()(int64_t i) const {
    return static_cast<float>(narrow::load(dtype, bits[i]).as_double());
  }
};

template <class Input, class O>
void dequantize_run(const Input &x, O *y, const double *scale, const double *zero, int64_t step,
                    int64_t n) {
  if (step == 0) {
    const double s = *scale, z = *zero;
    vec::run_best([&]() LUMEN_VEC_INLINE {
      for (int64_t i = 0; i < n; ++i) y[i] = quant::dequantized<O>(x(i), z, s);
    });
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = quant::dequantized<O>(x(i), zero[i], scale[i]);
}

template <class Q>
void dequantize_linear(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const QuantParams p(ctx, x.shape());
  const auto go = [&](auto tag) {
    using O = decltype(tag);
    O *py = y.data<O>();
    p.for_each_run(ctx.pool, [&](int64_t at, int64_t param, int64_t step, int64_t n) {
      const double *scale = p.scale.data() + param, *zero = p.zero.data() + param;
      if constexpr (std::is_same_v<Q, uint8_t>)
        if (is_narrow(x.dtype()))
          return dequantize_run(
              NarrowInput{x.dtype(), static_cast<const uint8_t *>(x.raw_data()) + at}, py + at,
              scale, zero, step, n);
      dequantize_run(QuantizedInput<Q>{x.data<Q>() + at}, py + at, scale, zero, step, n);
    });
  };
  switch (y.dtype()) {
    case DType::Float32:
      return go(float{});
    case DType::Float64:
      return go(double{});
    case DType::Float16:
      return go(Float16{});
    case DType::BFloat16:
      return go(BFloat16{});
    default:
      ctx.fail("output dtype ", dtype_name(y.dtype()), " is not a float type");
  }
}

LUMEN_REGISTER_KERNEL("cpu", "quantize_linear", quantize_linear<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "quantize_linear", quantize_linear<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "quantize_linear", quantize_linear<Float16>, DType::Float16);
LUMEN_REGISTER_KERNEL("cpu", "quantize_linear", quantize_linear<BFloat16>, DType::BFloat16);
LUMEN_REGISTER_KERNEL("cpu", "dequantize_linear", dequantize_linear<uint8_t>, DType::UInt8);
LUMEN_REGISTER_KERNEL("cpu", "dequantize_linear", dequantize_linear<int8_t>, DType::Int8);
LUMEN_REGISTER_KERNEL("cpu", "dequantize_linear", dequantize_linear<uint16_t>, DType::UInt16);
LUMEN_REGISTER_KERNEL("cpu", "dequantize_linear", dequantize_linear<int16_t>, DType::Int16);
LUMEN_REGISTER_KERNEL("cpu", "dequantize_linear", dequantize_linear<int32_t>, DType::Int32);
// The narrow types, one byte per element (Tensor::raw_data), decoded by NarrowInput.
LUMEN_REGISTER_KERNEL("cpu", "dequantize_linear", dequantize_linear<uint8_t>, DType::Float8E4M3FN,
                      DType::Float8E4M3FNUZ, DType::Float8E5M2, DType::Float8E5M2FNUZ, DType::UInt4,
                      DType::Int4, DType::Float4E2M1, DType::UInt2, DType::Int2);

}  // namespace
}  // namespace lumen
