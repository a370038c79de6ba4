// Reference comparison, logical, bitwise and selection kernels (naive broadcasting loops).
#include <cmath>
#include <cstring>
#include <string>

#include "backends/common/binary_functors.h"
#include "backends/common/logical_functors.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Comparisons: any dtype (bool included), output bool.
template <class F>
void compare(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const bool ok = bin::visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    bool *py = y.data<bool>();
    const F f;
    bin::for_each_broadcast<2>(y.shape(), {&a.shape(), &b.shape()},
                               [&](int64_t i, const std::array<int64_t, 2> &o) {
                                 py[i] = f(bin::load(pa[o[0]]), bin::load(pb[o[1]]));
                               });
  });
  if (!ok) ctx.fail("no reference kernel for ", dtype_name(a.dtype()));
}

#define LUMEN_REF_COMPARE(name, F) \
  LUMEN_REGISTER_KERNEL("reference", name, compare<F>, LUMEN_NUMERIC_DTYPES, DType::Bool)
LUMEN_REF_COMPARE("equal", bin::Equal);
LUMEN_REF_COMPARE("less", bin::Less);
LUMEN_REF_COMPARE("greater", bin::Greater);
LUMEN_REF_COMPARE("less_equal", bin::LessEqual);
LUMEN_REF_COMPARE("greater_equal", bin::GreaterEqual);

template <class F>
void logical(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const bool *pa = a.data<bool>(), *pb = b.data<bool>();
  bool *py = y.data<bool>();
  const F f;
  bin::for_each_broadcast<2>(
      y.shape(), {&a.shape(), &b.shape()},
      [&](int64_t i, const std::array<int64_t, 2> &o) { py[i] = f(pa[o[0]], pb[o[1]]); });
}
LUMEN_REGISTER_KERNEL("reference", "logical_and", logical<logic::And>, DType::Bool);
LUMEN_REGISTER_KERNEL("reference", "logical_or", logical<logic::Or>, DType::Bool);
LUMEN_REGISTER_KERNEL("reference", "logical_xor", logical<logic::Xor>, DType::Bool);

void logical_not(KernelContext &ctx) {
  const bool *x = ctx.input(0).data<bool>();
  bool *y = ctx.output(0).data<bool>();
  for (int64_t i = 0, n = ctx.output(0).numel(); i < n; ++i) y[i] = !x[i];
}
LUMEN_REGISTER_KERNEL("reference", "logical_not", logical_not, DType::Bool);

template <class F>
void bitwise(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  const F f{};
  bool done = false;
  bin::visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T *pa = a.data<T>(), *pb = b.data<T>();
      T *py = y.data<T>();
      bin::for_each_broadcast<2>(
          y.shape(), {&a.shape(), &b.shape()},
          [&](int64_t i, const std::array<int64_t, 2> &o) { py[i] = f(pa[o[0]], pb[o[1]]); });
      done = true;
    }
  });
  if (!done) ctx.fail("no reference kernel for ", dtype_name(a.dtype()));
}

#define LUMEN_INTEGER_DTYPES                                                          \
  DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::UInt16, \
      DType::UInt32, DType::UInt64
void bit_shift(KernelContext &ctx) {
  if (ctx.attrs.get_string("direction", "") == "LEFT") return bitwise<bin::ShiftLeft>(ctx);
  bitwise<bin::ShiftRight>(ctx);
}

LUMEN_REGISTER_KERNEL("reference", "bitwise_and", bitwise<bin::BitAnd>, LUMEN_INTEGER_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "bitwise_or", bitwise<bin::BitOr>, LUMEN_INTEGER_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "bitwise_xor", bitwise<bin::BitXor>, LUMEN_INTEGER_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "bit_shift", bit_shift, LUMEN_INTEGER_DTYPES);

void bitwise_not(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  bool done = false;
  bin::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T *px = x.data<T>();
      T *py = y.data<T>();
      for (int64_t i = 0, n = y.numel(); i < n; ++i) py[i] = T(~px[i]);
      done = true;
    }
  });
  if (!done) ctx.fail("no reference kernel for ", dtype_name(x.dtype()));
}
LUMEN_REGISTER_KERNEL("reference", "bitwise_not", bitwise_not, LUMEN_INTEGER_DTYPES);

// is_nan / is_inf: floating inputs only, output bool.
template <bool nan>
void float_test(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  bool *py = ctx.output(0).data<bool>();
  const bool pos = ctx.attrs.get_int("detect_positive", 1) != 0;
  const bool neg = ctx.attrs.get_int("detect_negative", 1) != 0;
  bool done = false;
  bin::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<bin::Compute<T>>) {
      const T *px = x.data<T>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) {
        const auto v = bin::load(px[i]);
        if constexpr (nan)
          py[i] = std::isnan(v);
        else
          py[i] = std::isinf(v) && (v > 0 ? pos : neg);
      }
      done = true;
    }
  });
  if (!done) ctx.fail("no reference kernel for ", dtype_name(x.dtype()));
}
#define LUMEN_FLOAT_DTYPES DType::Float32, DType::Float64, DType::Float16, DType::BFloat16
LUMEN_REGISTER_KERNEL("reference", "is_nan", float_test<true>, LUMEN_FLOAT_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "is_inf", float_test<false>, LUMEN_FLOAT_DTYPES);

// where: dispatched on the condition (bool); x and y share any dtype, copied bytewise.
void where(KernelContext &ctx) {
  const Tensor &c = ctx.input(0), &x = ctx.input(1), &yv = ctx.input(2);
  Tensor &out = ctx.output(0);
  const bool *pc = c.data<bool>();
  const size_t elem = dtype_size(out.dtype());
  const auto *px = static_cast<const unsigned char *>(x.raw_data());
  const auto *py = static_cast<const unsigned char *>(yv.raw_data());
  auto *po = static_cast<unsigned char *>(out.raw_data());
  if (out.dtype() == DType::String) {  // objects: assigned, never copied as bytes
    const std::string *sx = x.data<std::string>(), *sy = yv.data<std::string>();
    std::string *so = out.data<std::string>();
    bin::for_each_broadcast<3>(out.shape(), {&c.shape(), &x.shape(), &yv.shape()},
                               [&](int64_t i, const std::array<int64_t, 3> &o) {
                                 so[i] = pc[o[0]] ? sx[o[1]] : sy[o[2]];
                               });
    return;
  }
  if (holds_objects(out.dtype())) ctx.fail("cannot select ", dtype_name(out.dtype()), " values");
  bin::for_each_broadcast<3>(out.shape(), {&c.shape(), &x.shape(), &yv.shape()},
                             [&](int64_t i, const std::array<int64_t, 3> &o) {
                               const unsigned char *src =
                                   pc[o[0]] ? px + size_t(o[1]) * elem : py + size_t(o[2]) * elem;
                               std::memcpy(po + size_t(i) * elem, src, elem);
                             });
}
LUMEN_REGISTER_KERNEL("reference", "where", where, DType::Bool);

}  // namespace
}  // namespace lumen
