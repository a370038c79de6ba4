// Reference conv_nd, conv_transpose, max_pool_nd, avg_pool_nd, lp_pool and max_unpool: direct
// loops over N-d positions in double, following the ONNX definitions (see
// src/graph/ops/conv_nd.cc). Shapes were checked by inference; max_unpool validates its indices.
#include <cmath>
#include <limits>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/f64_io.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Like from_f64, but integer outputs (max pooling) take the value as is.
void store_f64(const KernelContext &ctx, Tensor &t, const std::vector<double> &v) {
  const bool ok = bin::visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T *p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Float16> ||
                    std::is_same_v<T, BFloat16>)
        p[i] = bin::store<T>(bin::Compute<T>(v[i]));
      else
        p[i] = T(v[i]);  // max pooling of integers: the value is one of the inputs
    }
  });
  if (!ok) ctx.fail("unsupported dtype ", dtype_name(t.dtype()));
}

// Advances a multi-index over `dims`; false after the last one.
bool next(std::vector<int64_t> &idx, const std::vector<int64_t> &dims) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t prod(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

struct Geometry {
  size_t k;
  std::vector<int64_t> in, out, kernel, strides, pads, dilations;
};

Geometry geometry(const KernelContext &ctx, const Shape &x, const Shape &y,
                  std::vector<int64_t> kernel) {
  Geometry g;
  g.k = x.rank() - 2;
  g.in.assign(x.begin() + 2, x.end());
  g.out.assign(y.begin() + 2, y.end());
  g.kernel = std::move(kernel);
  g.strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(g.k, 1));
  g.pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * g.k, 0));
  g.dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(g.k, 1));
  return g;
}

void conv_nd(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1);
  Tensor &ty = ctx.output(0);
  const Geometry g =
      geometry(ctx, tx.shape(), ty.shape(), {tw.shape().begin() + 2, tw.shape().end()});
  const std::vector<double> x = to_f64(ctx, tx), w = to_f64(ctx, tw);
  std::vector<double> bias;
  if (ctx.has_input(2)) bias = to_f64(ctx, ctx.input(2));
  const int64_t n = tx.shape()[0], c = tx.shape()[1], m = tw.shape()[0];
  const int64_t group = ctx.attrs.get_int("group", 1), cg = c / group, mg = m / group;
  const int64_t in_size = prod(g.in), out_size = prod(g.out), k_size = prod(g.kernel);
  std::vector<double> y(static_cast<size_t>(ty.numel()), 0.0);
  if (out_size == 0 || y.empty()) return store_f64(ctx, ty, y);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t grp = oc / mg;
      std::vector<int64_t> o(g.k, 0);
      int64_t oflat = 0;
      do {
        double acc = bias.empty() ? 0.0 : bias[oc];
        for (int64_t ic = 0; ic < cg; ++ic) {
          const int64_t xc = grp * cg + ic;
          std::vector<int64_t> kk(g.k, 0);
          int64_t kflat = 0;
          do {
            int64_t xflat = 0;
            bool inside = true;
            for (size_t d = 0; d < g.k; ++d) {
              const int64_t p = o[d] * g.strides[d] - g.pads[d] + kk[d] * g.dilations[d];
              if (p < 0 || p >= g.in[d]) {
                inside = false;
                break;
              }
              xflat = xflat * g.in[d] + p;
            }
            if (inside)
              acc += x[(b * c + xc) * in_size + xflat] * w[(oc * cg + ic) * k_size + kflat];
            ++kflat;
          } while (next(kk, g.kernel));
        }
        y[(b * m + oc) * out_size + oflat] = acc;
        ++oflat;
      } while (next(o, g.out));
    }
  store_f64(ctx, ty, y);
}

void conv_transpose(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1);
  Tensor &ty = ctx.output(0);
  const Geometry g =
      geometry(ctx, tx.shape(), ty.shape(), {tw.shape().begin() + 2, tw.shape().end()});
  const std::vector<double> x = to_f64(ctx, tx), w = to_f64(ctx, tw);
  const int64_t n = tx.shape()[0], c = tx.shape()[1];
  const int64_t group = ctx.attrs.get_int("group", 1), cg = c / group, mg = tw.shape()[1];
  const int64_t m = mg * group;
  const int64_t in_size = prod(g.in), out_size = prod(g.out), k_size = prod(g.kernel);
  std::vector<double> y(static_cast<size_t>(ty.numel()), 0.0);
  if (ctx.has_input(2)) {
    const std::vector<double> bias = to_f64(ctx, ctx.input(2));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oc = 0; oc < m; ++oc)
        for (int64_t i = 0; i < out_size; ++i) y[(b * m + oc) * out_size + i] = bias[oc];
  }
  if (in_size == 0 || y.empty()) return store_f64(ctx, ty, y);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ic = 0; ic < c; ++ic) {
      const int64_t grp = ic / cg;
      std::vector<int64_t> i(g.k, 0);
      int64_t iflat = 0;
      do {
        const double xv = x[(b * c + ic) * in_size + iflat];
        std::vector<int64_t> kk(g.k, 0);
        int64_t kflat = 0;
        do {
          int64_t yflat = 0;
          bool inside = true;
          for (size_t d = 0; d < g.k; ++d) {
            const int64_t p = i[d] * g.strides[d] - g.pads[d] + kk[d] * g.dilations[d];
            if (p < 0 || p >= g.out[d]) {
              inside = false;
              break;
            }
            yflat = yflat * g.out[d] + p;
          }
          if (inside)
            for (int64_t ml = 0; ml < mg; ++ml)
              y[(b * m + grp * mg + ml) * out_size + yflat] +=
                  xv * w[(ic * mg + ml) * k_size + kflat];
          ++kflat;
        } while (next(kk, g.kernel));
        ++iflat;
      } while (next(i, g.in));
    }
  store_f64(ctx, ty, y);
}

template <int kind>  // 0 max, 1 avg, 2 lp
void pool_nd(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0);
  Tensor &ty = ctx.output(0);
  const Geometry g = geometry(ctx, tx.shape(), ty.shape(), ctx.attrs.get_ints("kernel_shape", {}));
  const std::vector<double> x = to_f64(ctx, tx);
  const bool include_pad = ctx.attrs.get_int("count_include_pad", 0) != 0;
  const double p = ctx.attrs.get_float("p", 2.0);
  const bool col_major = ctx.attrs.get_int("storage_order", 0) != 0;
  const int64_t planes = tx.shape()[0] * tx.shape()[1];
  const int64_t in_size = prod(g.in), out_size = prod(g.out);
  std::vector<double> y(static_cast<size_t>(ty.numel()), 0.0);
  std::vector<int64_t> indices(y.size(), 0);
  // Column-major strides over the spatial dims for storage_order=1.
  std::vector<int64_t> col_stride(g.k, 1);
  for (size_t d = 1; d < g.k; ++d) col_stride[d] = col_stride[d - 1] * g.in[d - 1];
  if (out_size > 0 && !y.empty())
    for (int64_t pl = 0; pl < planes; ++pl) {
      std::vector<int64_t> o(g.k, 0);
      int64_t oflat = 0;
      do {
        double acc = kind == 0 ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t best = -1, real = 0, counted = 0;
        std::vector<int64_t> kk(g.k, 0);
        do {
          int64_t xflat = 0, cflat = 0;
          bool inside = true, valid = true;
          for (size_t d = 0; d < g.k; ++d) {
            const int64_t pos = o[d] * g.strides[d] - g.pads[d] + kk[d] * g.dilations[d];
            if (pos >= g.in[d] + g.pads[d + g.k]) valid = false;  // beyond the end padding
            if (pos < 0 || pos >= g.in[d]) inside = false;
            xflat = xflat * g.in[d] + pos;
            cflat += pos * col_stride[d];
          }
          if (!valid) continue;
          ++counted;
          if (!inside) continue;
          ++real;
          const double v = x[pl * in_size + xflat];
          if (kind == 0) {
            if (best < 0 || v > acc) {
              acc = v;
              best = col_major ? cflat : xflat;
            }
          } else if (kind == 1) {
            acc += v;
          } else {
            acc += std::pow(std::abs(v), p);
          }
        } while (next(kk, g.kernel));
        if (kind == 1) {
          const int64_t div = include_pad ? counted : real;
          acc = div > 0 ? acc / double(div) : std::numeric_limits<double>::quiet_NaN();
        } else if (kind == 2) {
          acc = std::pow(acc, 1.0 / p);
        }
        y[pl * out_size + oflat] = acc;
        indices[pl * out_size + oflat] = best < 0 ? -1 : pl * in_size + best;
        ++oflat;
      } while (next(o, g.out));
    }
  store_f64(ctx, ty, y);
  if (kind == 0 && ctx.outputs.size() > 1 && ctx.outputs[1]) {
    int64_t *out = ctx.output(1).data<int64_t>();
    for (size_t i = 0; i < indices.size(); ++i) out[i] = indices[i];
  }
}

// ONNX scatters into the default output shape ((in - 1) * stride + k - pads) and places that
// block at the origin of a larger output_shape, zero elsewhere.
void max_unpool(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &ti = ctx.input(1);
  Tensor &ty = ctx.output(0);
  if (ti.shape() != tx.shape())
    ctx.fail("indices ", ti.shape().to_string(), " must have the input's shape ",
             tx.shape().to_string());
  const Geometry g = geometry(ctx, tx.shape(), ty.shape(), ctx.attrs.get_ints("kernel_shape", {}));
  std::vector<int64_t> dims{tx.shape()[0], tx.shape()[1]};
  for (size_t d = 0; d < g.k; ++d)
    dims.push_back((g.in[d] - 1) * g.strides[d] + g.kernel[d] - g.pads[d] - g.pads[d + g.k]);
  for (int64_t d : dims)
    if (d < 0) ctx.fail("the default output shape ", Shape(dims).to_string(), " is negative");
  const std::vector<double> x = to_f64(ctx, tx);
  std::vector<double> block(static_cast<size_t>(prod(dims)), 0.0);
  const int64_t *ind = ti.data<int64_t>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (ind[i] < 0 || ind[i] >= int64_t(block.size()))
      ctx.fail("index ", ind[i], " is out of range for the unpooled shape ",
               Shape(dims).to_string());
    block[static_cast<size_t>(ind[i])] = x[i];
  }
  std::vector<double> y(static_cast<size_t>(ty.numel()), 0.0);
  const std::vector<int64_t> &odims = ty.shape().dims();
  if (!block.empty() && !y.empty()) {
    std::vector<int64_t> idx(dims.size(), 0);
    do {
      int64_t src = 0, dst = 0;
      bool inside = true;
      for (size_t d = 0; d < dims.size(); ++d) {
        if (idx[d] >= odims[d]) inside = false;
        src = src * dims[d] + idx[d];
        dst = dst * odims[d] + idx[d];
      }
      if (inside) y[static_cast<size_t>(dst)] = block[static_cast<size_t>(src)];
    } while (next(idx, dims));
  }
  store_f64(ctx, ty, y);
}

#define LUMEN_FLOAT_KERNEL(op, fn)                                                           \
  LUMEN_REGISTER_KERNEL("reference", op, fn, DType::Float32, DType::Float64, DType::Float16, \
                        DType::BFloat16)
LUMEN_FLOAT_KERNEL("conv_nd", conv_nd);
LUMEN_FLOAT_KERNEL("conv_transpose", conv_transpose);
LUMEN_REGISTER_KERNEL("reference", "max_pool_nd", pool_nd<0>, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16, DType::UInt8, DType::Int8);
LUMEN_FLOAT_KERNEL("avg_pool_nd", pool_nd<1>);
LUMEN_FLOAT_KERNEL("lp_pool", pool_nd<2>);
LUMEN_FLOAT_KERNEL("max_unpool", max_unpool);

}  // namespace
}  // namespace lumen
