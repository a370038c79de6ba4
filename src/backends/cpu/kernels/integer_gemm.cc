// CPU integer matmul and convolution (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv) and
// DynamicQuantizeLinear: the ops of dynamically and statically quantized models.
//
// The integer products run on the float32 GEMM, exactly: operands minus their zero points are
// integers of at most 255 in magnitude (383 if a zero point's dtype differs from its operand's),
// so the depth is cut into blocks short enough that no partial sum reaches 2^24 (256 products of
// 255 x 255), where every float32 integer is exact whatever the summation order or FMA; each
// block's GEMM is added into int64 accumulators. Convolutions gather (x - x_zero_point) into im2col
// columns (zero in the padding) per image and group. Results then go through the reference's
// arithmetic (backends/reference/kernels/quantize.cc): int32 with an overflow check, or requantized
// as round_half_even(acc * x_scale * w_scale / y_scale + y_zero_point), saturated.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

#include "backends/common/matmul_plan.h"
#include "backends/common/requantize.h"
#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/quantize_f32.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 14;

// Scratch memory, checked against the memory budget like every tensor.
template <class T>
T *scratch(Tensor &holder, int64_t n) {
  holder = Tensor::empty(Shape{n}, dtype_of<T>);
  return holder.data<T>();
}

// The largest |x - zero point| for an 8-bit x and its zero point.
int64_t magnitude(const Tensor &x, const Tensor *zp) {
  return !zp || zp->numel() == 0 || zp->dtype() == x.dtype() ? 255 : 383;
}

// Element i of an 8-bit integer tensor (int8 or uint8).
int64_t int8_at(const Tensor &t, int64_t i) {
  return t.dtype() == DType::Int8 ? int64_t(t.data<int8_t>()[i]) : int64_t(t.data<uint8_t>()[i]);
}

void check_8bit(const KernelContext &ctx, const Tensor &t, const char *what) {
  if (t.dtype() != DType::Int8 && t.dtype() != DType::UInt8)
    ctx.fail(what, " must be int8 or uint8, got ", dtype_name(t.dtype()));
}

// The zero point of row/column i: a scalar or one per index.
int64_t zero_at(const Tensor *zp, int64_t i) {
  if (!zp || zp->numel() == 0) return 0;
  return int8_at(*zp, zp->numel() == 1 ? 0 : i);
}

template <class Q>
LUMEN_VEC_INLINE inline void widen_row(const Q *__restrict x, int64_t n, float zero,
                                       const float *__restrict col_zero, float *__restrict dst) {
  if (col_zero)
    for (int64_t j = 0; j < n; ++j) dst[j] = float(x[j]) - col_zero[j];
  else
    for (int64_t j = 0; j < n; ++j) dst[j] = float(x[j]) - zero;
}

// dst[i * cols + j] = x[offset + i * ld + j] minus its zero point, as float (exact): zp holds one
// value, one per row (per_row) or one per column.
void widen(ThreadPool &pool, const Tensor &x, int64_t offset, int64_t rows, int64_t cols,
           int64_t ld, const Tensor *zp, bool per_row, float *dst) {
  const bool scalar = !zp || zp->numel() <= 1;
  std::vector<float> col_zero;
  if (!scalar && !per_row)
    for (int64_t j = 0; j < cols; ++j) col_zero.push_back(float(zero_at(zp, j)));
  pool.parallel_for(
      rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) {
          const float zero = scalar ? float(zero_at(zp, 0)) : per_row ? float(zero_at(zp, i)) : 0.f;
          const float *cz = col_zero.empty() ? nullptr : col_zero.data();
          vec::run_best([&]() LUMEN_VEC_INLINE {
            if (x.dtype() == DType::Int8)
              widen_row(x.data<int8_t>() + offset + i * ld, cols, zero, cz, dst + i * cols);
            else
              widen_row(x.data<uint8_t>() + offset + i * ld, cols, zero, cz, dst + i * cols);
          });
        }
      });
}

// Depth [k0, k0 + kc) of another B operand, as a B of depth kc.
class DepthSlice final : public cpu::GemmB {
 public:
  DepthSlice(const cpu::GemmB &b, int64_t k0) : b_(b), k0_(k0) {}
  cpu::PanelBlock panels(int64_t n0, int64_t nc, int64_t k0, int64_t kc, int nr,
                         float *buffer) const override {
    return b_.panels(n0, nc, k0_ + k0, kc, nr, buffer);
  }
  bool prepacked() const override { return b_.prepacked(); }

 private:
  const cpu::GemmB &b_;
  int64_t k0_;
};

// acc[m, n] += A[m, k] B[k, n] for float-held integers of magnitude at most `bound` (A row-major
// with lda), exactly: the depth in blocks whose partial sums stay below 2^24, each block's float
// product added into int64 by the GEMM's finish callback while it is in cache.
void exact_gemm(ThreadPool &pool, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                const cpu::GemmB &b, int64_t *acc, int64_t bound) {
  const int64_t exact_depth = std::max<int64_t>(1, ((int64_t{1} << 24) - 1) / (bound * bound));
  Tensor holder;
  float *block = scratch<float>(holder, m * n);
  const cpu::GemmFinish add = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    for (int64_t i = m0; i < m1; ++i)
      for (int64_t j = n0; j < n1; ++j) acc[i * n + j] += static_cast<int64_t>(block[i * n + j]);
  };
  cpu::GemmOptions options;
  options.finish = &add;
  for (int64_t k0 = 0; k0 < k; k0 += exact_depth) {
    const int64_t kc = std::min(exact_depth, k - k0);
    cpu::sgemm(pool, m, n, kc, cpu::StridedA(a + k0, lda, false), DepthSlice(b, k0), block, n,
               options);
  }
}

// A constant B (input b_index, 2-D) minus its constant zero point (input b_index + 2), widened to
// float and packed once per compiled step.
template <size_t kB>
std::shared_ptr<const void> prepare_integer_b(const PrepareContext &ctx) {
  const Tensor *b = ctx.constant(kB);
  const bool zp_given = kB + 2 < ctx.input_shapes.size();
  const Tensor *zp = zp_given ? ctx.constant(kB + 2) : nullptr;
  if (!b || b->rank() != 2 || (b->dtype() != DType::Int8 && b->dtype() != DType::UInt8) ||
      (zp_given && !zp) || (zp && zp->dtype() != DType::Int8 && zp->dtype() != DType::UInt8))
    return nullptr;
  const int64_t k = b->shape()[0], n = b->shape()[1];
  if (zp && zp->numel() != 1 && zp->numel() != n) return nullptr;
  ThreadPool serial(1);
  std::vector<float> wide(static_cast<size_t>(k * n));
  widen(ctx.pool ? *ctx.pool : serial, *b, 0, k, n, n, zp, false, wide.data());
  return std::make_shared<cpu::PackedB>(cpu::StridedB(wide.data(), n, false), k, n,
                                        cpu::default_f32_gemm_microkernel());
}

// C[t] = (A[t] - a_zp) (B[t] - b_zp) over NumPy-broadcast batches, as int64 in `out`; B from the
// compiled step's prepared panels when it is a constant.
std::vector<int64_t> integer_matmul(KernelContext &ctx, const Tensor &a, const Tensor *a_zp,
                                    const Tensor &b, const Tensor *b_zp) {
  check_8bit(ctx, a, "A");
  check_8bit(ctx, b, "B");
  const MatmulPlan plan = plan_matmul(ctx, a.shape(), b.shape());
  const int64_t m = plan.m, k = plan.k, n = plan.n, count = std::ssize(plan.a);
  if (ctx.output(0).numel() != checked_mul(count, checked_mul(m, n)))
    ctx.fail("output shape ", ctx.output(0).shape().to_string(), " does not match the operands");
  std::vector<int64_t> out(static_cast<size_t>(count * m * n), 0);
  const auto *packed =
      plan.b_constant && b.rank() == 2 ? static_cast<const cpu::PackedB *>(ctx.prepared) : nullptr;
  Tensor a_holder, b_holder;
  float *af = scratch<float>(a_holder, m * k);
  float *bf = packed ? nullptr : scratch<float>(b_holder, k * n);
  const int64_t bound = std::max(magnitude(a, a_zp), magnitude(b, b_zp));
  int64_t converted_b = -1;
  for (int64_t t = 0; t < count; ++t) {
    widen(ctx.pool, a, plan.a[t] * m * k, m, k, k, a_zp, true, af);
    if (packed) {
      exact_gemm(ctx.pool, m, n, k, af, k, *packed, out.data() + t * m * n, bound);
      continue;
    }
    if (plan.b[t] != converted_b) {
      widen(ctx.pool, b, plan.b[t] * k * n, k, n, n, b_zp, false, bf);
      converted_b = plan.b[t];
    }
    exact_gemm(ctx.pool, m, n, k, af, k, cpu::StridedB(bf, n, false), out.data() + t * m * n,
               bound);
  }
  return out;
}

void store_int32(KernelContext &ctx, const std::vector<int64_t> &acc) {
  int32_t *y = ctx.output(0).data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) {
    if (acc[i] < std::numeric_limits<int32_t>::min() ||
        acc[i] > std::numeric_limits<int32_t>::max())
      ctx.fail("int32 accumulator overflow");
    y[i] = static_cast<int32_t>(acc[i]);
  }
}

void matmul_integer(KernelContext &ctx) {
  store_int32(ctx, integer_matmul(ctx, ctx.input(0), ctx.has_input(2) ? &ctx.input(2) : nullptr,
                                  ctx.input(1), ctx.has_input(3) ? &ctx.input(3) : nullptr));
}

// Per output channel: (x - x_zp) * (w - w_zp[m]) summed over the window (+ bias[m]), 2-D NCHW.
std::vector<int64_t> integer_conv2d(KernelContext &ctx, const Tensor &x, const Tensor *x_zp,
                                    const Tensor &w, const Tensor *w_zp, const Tensor *bias) {
  check_8bit(ctx, x, "X");
  check_8bit(ctx, w, "W");
  const Shape &xs = x.shape(), &ws = w.shape(), &os = ctx.output(0).shape();
  if (xs.rank() != 4 || ws.rank() != 4 || os.rank() != 4)
    ctx.fail("only 2-D convolutions are supported, got X ", xs.to_string());
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto dil = ctx.attrs.get_ints("dilations", {1, 1});
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const int64_t group = ctx.attrs.get_int("group", 1);
  const int64_t batch = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const int64_t mo = ws[0], cg = ws[1], kh = ws[2], kw = ws[3], oh = os[2], ow = os[3];
  if (os[1] != mo || group <= 0 || c != cg * group || mo % group != 0)
    ctx.fail("shapes do not match: x ", xs.to_string(), ", w ", ws.to_string());
  const int64_t mg = mo / group, depth = cg * kh * kw, pixels = oh * ow;
  const int64_t xz = zero_at(x_zp, 0);
  std::vector<int64_t> out(static_cast<size_t>(os.numel()), 0);
  Tensor w_holder, cols_holder;
  float *wf = scratch<float>(w_holder, mo * depth);
  float *cols = scratch<float>(cols_holder, checked_mul(depth, pixels));
  const int64_t bound = std::max(magnitude(x, x_zp), magnitude(w, w_zp));
  widen(ctx.pool, w, 0, mo, depth, depth, w_zp, true, wf);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t g = 0; g < group; ++g) {
      // im2col: row (ci, u, v), column (i, j) = x - xz at the tap, 0 in the padding.
      ctx.pool.parallel_for(depth, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t ci = r / (kh * kw), u = r / kw % kh, v = r % kw;
          const int64_t plane = ((b * c) + g * cg + ci) * h * wd;
          float *row = cols + r * pixels;
          for (int64_t i = 0; i < oh; ++i) {
            const int64_t yy = i * strides[0] - pads[0] + u * dil[0];
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t xx = j * strides[1] - pads[1] + v * dil[1];
              row[i * ow + j] = yy < 0 || yy >= h || xx < 0 || xx >= wd
                                    ? 0.0f
                                    : static_cast<float>(int8_at(x, plane + yy * wd + xx) - xz);
            }
          }
        }
      });
      int64_t *acc = out.data() + (b * mo + g * mg) * pixels;
      exact_gemm(ctx.pool, mg, pixels, depth, wf + g * mg * depth, depth,
                 cpu::StridedB(cols, pixels, false), acc, bound);
    }
  if (bias) {
    if (bias->dtype() != DType::Int32 || bias->numel() != mo)
      ctx.fail("bias must be int32 with one value per output channel");
    for (int64_t i = 0; i < std::ssize(out); ++i) out[i] += bias->data<int32_t>()[i / pixels % mo];
  }
  return out;
}

void conv_integer(KernelContext &ctx) {
  store_int32(ctx,
              integer_conv2d(ctx, ctx.input(0), ctx.has_input(2) ? &ctx.input(2) : nullptr,
                             ctx.input(1), ctx.has_input(3) ? &ctx.input(3) : nullptr, nullptr));
}

// round_half_even(acc * x_scale * w_scale[c] / y_scale + y_zp), saturated; the multiplier formed
// in the scales' precision (backends/common/requantize.h).
template <class Channel>
void requantize(KernelContext &ctx, const std::vector<int64_t> &acc, const Tensor &x_scale,
                const Tensor &w_scale, const Channel &channel) {
  const Tensor &y_scale = ctx.input(6), &y_zp = ctx.input(7);
  Tensor &y = ctx.output(0);
  std::vector<double> mult(static_cast<size_t>(w_scale.numel()));
  for (size_t i = 0; i < mult.size(); ++i)
    mult[i] = requant_multiplier(x_scale, scalar::value_as_double(w_scale, int64_t(i)), y_scale);
  const double zp = double(int8_at(y_zp, 0));
  const auto run = [&](auto tag) {
    using Q = decltype(tag);
    Q *py = y.data<Q>();
    const double lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
    ctx.pool.parallel_for(std::ssize(acc), kGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const double v = std::nearbyint(
            double(acc[i]) * mult[mult.size() == 1 ? 0 : static_cast<size_t>(channel(i))] + zp);
        py[i] = v != v ? Q(0) : Q(std::clamp(v, lo, hi));
      }
    });
  };
  if (y.dtype() == DType::UInt8) return run(uint8_t{});
  if (y.dtype() == DType::Int8) return run(int8_t{});
  ctx.fail("output dtype ", dtype_name(y.dtype()), " is not supported; expected uint8 or int8");
}

void qlinear_matmul(KernelContext &ctx) {
  const std::vector<int64_t> acc =
      integer_matmul(ctx, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5));
  const Shape &os = ctx.output(0).shape();
  const int64_t n = os.rank() >= 1 && ctx.input(3).shape().rank() >= 2 ? os[os.rank() - 1] : 1;
  requantize(ctx, acc, ctx.input(1), ctx.input(4), [n](int64_t i) { return i % n; });
}

void qlinear_conv(KernelContext &ctx) {
  const std::vector<int64_t> acc =
      integer_conv2d(ctx, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5),
                     ctx.has_input(8) ? &ctx.input(8) : nullptr);
  const Shape &os = ctx.output(0).shape();
  const int64_t plane = std::max<int64_t>(1, os[2] * os[3]), mo = os[1];
  requantize(ctx, acc, ctx.input(1), ctx.input(4),
             [plane, mo](int64_t i) { return i / plane % mo; });
}

// uint8 quantization with the scale and zero point taken from the input's range (which always
// includes 0).
void dynamic_quantize_linear(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const float *px = x.data<float>();
  const int64_t n = x.numel();
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(64, n / kGrain));
  std::vector<float> lows(static_cast<size_t>(chunks), 0.0f), highs(lows);
  std::vector<char> nan(static_cast<size_t>(chunks), 0);
  ctx.pool.parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float lo = 0, hi = 0;
      bool any_nan = false;
      for (int64_t i = c * n / chunks, e = (c + 1) * n / chunks; i < e; ++i) {
        any_nan = any_nan || px[i] != px[i];
        lo = std::min(lo, px[i]);
        hi = std::max(hi, px[i]);
      }
      lows[c] = lo;
      highs[c] = hi;
      nan[c] = any_nan;
    }
  });
  if (std::find(nan.begin(), nan.end(), 1) != nan.end()) ctx.fail("input contains NaN");
  const float lo = *std::min_element(lows.begin(), lows.end());
  const float hi = *std::max_element(highs.begin(), highs.end());
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zp = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  uint8_t *py = ctx.output(0).data<uint8_t>();
  ctx.pool.parallel_for(n, kGrain, [&](int64_t i0, int64_t i1) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      cpu::quantize_f32(px + i0, py + i0, i1 - i0, scale, zp, 0.0f, 255.0f);
    });
  });
  ctx.output(1).data<float>()[0] = scale;
  ctx.output(2).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

LUMEN_REGISTER_KERNEL("cpu", "matmul_integer", matmul_integer, DType::UInt8, DType::Int8);
LUMEN_REGISTER_PREPARE("cpu", "matmul_integer", prepare_integer_b<1>, DType::UInt8, DType::Int8);
LUMEN_REGISTER_PREPARE("cpu", "qlinear_matmul", prepare_integer_b<3>, DType::UInt8, DType::Int8);
LUMEN_REGISTER_KERNEL("cpu", "conv_integer", conv_integer, DType::UInt8, DType::Int8);
LUMEN_REGISTER_KERNEL("cpu", "qlinear_matmul", qlinear_matmul, DType::UInt8, DType::Int8);
LUMEN_REGISTER_KERNEL("cpu", "qlinear_conv", qlinear_conv, DType::UInt8, DType::Int8);
LUMEN_REGISTER_KERNEL("cpu", "dynamic_quantize_linear", dynamic_quantize_linear, DType::Float32);

}  // namespace
}  // namespace lumen
