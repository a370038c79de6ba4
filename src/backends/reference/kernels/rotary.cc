// Reference rotary_embedding: for every (batch, position, head), the first rd features are
// rotated in pairs (x1, x2) -> (cos * x1 - sin * x2, sin * x1 + cos * x2) where the pairs are
// (j, j + rd/2) or, interleaved, (2j, 2j + 1); the rest are copied. Cache rows come from
// position_ids[b, s] (bounds-checked) or from [b, s] of 3-D caches. Computed in double.
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/broadcast_rows.h"
#include "backends/common/f64_io.h"
#include "core/kernel.h"

namespace lumen {
namespace {

void rotary_embedding(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &cos_t = ctx.input(1), &sin_t = ctx.input(2);
  Tensor &y = ctx.output(0);
  const bool four = x.rank() == 4;
  const int64_t B = x.shape()[0];
  const int64_t S = four ? x.shape()[2] : x.shape()[1];
  const int64_t H = four ? x.shape()[1] : ctx.attrs.get_int("num_heads", 0);
  const int64_t D = four ? x.shape()[3] : x.shape()[2] / H;
  const int64_t rd_attr = ctx.attrs.get_int("rotary_embedding_dim", 0);
  const int64_t rd = rd_attr == 0 ? D : rd_attr, half = rd / 2;
  const bool interleaved = ctx.attrs.get_int("interleaved", 0) != 0;
  const std::vector<double> xv = to_f64(ctx, x), cv = to_f64(ctx, cos_t), sv = to_f64(ctx, sin_t);
  std::vector<double> yv = xv;
  const bool has_pos = ctx.has_input(3);
  std::vector<int64_t> pos;
  if (has_pos) {
    const Tensor &p = ctx.input(3);
    if (p.shape()[0] != B || p.shape()[1] != S)
      ctx.fail("position_ids ", p.shape().to_string(), " must be [", B, ", ", S, "]");
    for (int64_t i = 0; i < p.numel(); ++i)
      pos.push_back(p.dtype() == DType::Int32 ? p.data<int32_t>()[i] : p.data<int64_t>()[i]);
  }
  const Shape &cs = cos_t.shape();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < S; ++s) {
      int64_t row = 0;
      if (has_pos) {
        row = pos[size_t(b * S + s)];
        if (row < 0 || row >= cs[0])
          ctx.fail("position id ", row, " is out of range for caches ", cs.to_string());
      } else if (cs.rank() == 3) {
        if (cs[0] != B || cs[1] != S)
          ctx.fail("caches ", cs.to_string(), " must be [", B, ", ", S, ", ", half, "]");
        row = b * S + s;
      } else {
        if (s >= cs[0]) ctx.fail("caches ", cs.to_string(), " have fewer than ", S, " rows");
        row = s;
      }
      const double *c = &cv[size_t(row * half)], *sn = &sv[size_t(row * half)];
      for (int64_t h = 0; h < H; ++h) {
        const int64_t base = four ? ((b * H + h) * S + s) * D : (b * S + s) * H * D + h * D;
        for (int64_t j = 0; j < half; ++j) {
          const int64_t i1 = base + (interleaved ? 2 * j : j);
          const int64_t i2 = base + (interleaved ? 2 * j + 1 : j + half);
          const double x1 = xv[size_t(i1)], x2 = xv[size_t(i2)];
          yv[size_t(i1)] = c[j] * x1 - sn[j] * x2;
          yv[size_t(i2)] = sn[j] * x1 + c[j] * x2;
        }
      }
    }
  }
  from_f64(ctx, y, yv);
}

LUMEN_REGISTER_KERNEL("reference", "rotary_embedding", rotary_embedding, DType::Float32,
                      DType::Float64, DType::Float16, DType::BFloat16);

// bit_cast: the bytes of x, unchanged, as the output's dtype (same size, checked by inference).
void bit_cast(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (y.nbytes() != x.nbytes()) ctx.fail("output size ", y.nbytes(), " != input ", x.nbytes());
  if (x.nbytes() > 0) std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
}

LUMEN_REGISTER_KERNEL("reference", "bit_cast", bit_cast, DType::Float32, DType::Float16,
                      DType::BFloat16, DType::Float64, DType::Int8, DType::Int16, DType::Int32,
                      DType::Int64, DType::UInt8, DType::Bool, DType::UInt16, DType::UInt32,
                      DType::UInt64, DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2,
                      DType::Float8E5M2FNUZ, DType::Float8E8M0);

// swiglu: a * sigmoid(alpha * a) * b, element by element, in double.
void swiglu(KernelContext &ctx) {
  const std::vector<double> a = to_f64(ctx, ctx.input(0)), b = to_f64(ctx, ctx.input(1));
  if (a.size() != b.size()) ctx.fail("inputs have ", a.size(), " and ", b.size(), " elements");
  const double alpha = ctx.attrs.get_float("alpha", 1.0);
  std::vector<double> y(a.size());
  for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] / (1.0 + std::exp(-alpha * a[i])) * b[i];
  from_f64(ctx, ctx.output(0), y);
}

LUMEN_REGISTER_KERNEL("reference", "swiglu", swiglu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

// Reference rotate_half_mix: y = x * cos + rotate_half(x) * sin element by element, in double:
// y[j] = x[j] cos[j] - x[j + D/2] sin[j] for j < D/2, y[j] = x[j] cos[j] + x[j - D/2] sin[j] after.
void rotate_half_mix(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &cos_t = ctx.input(1), &sin_t = ctx.input(2);
  const std::vector<double> xv = to_f64(ctx, x), cv = to_f64(ctx, cos_t), sv = to_f64(ctx, sin_t);
  const int64_t d = x.shape()[x.rank() - 1], half = d / 2, rows = d > 0 ? x.numel() / d : 0;
  const BroadcastRows row_of(x.shape(), cos_t.shape());
  std::vector<double> yv(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = xv.data() + r * d;
    const int64_t cache_row = row_of(r) * d;
    const double *c = cv.data() + cache_row, *s = sv.data() + cache_row;
    double *y = yv.data() + r * d;
    for (int64_t j = 0; j < d; ++j)
      y[j] = xr[j] * c[j] + (j < half ? -xr[j + half] : xr[j - half]) * s[j];
  }
  from_f64(ctx, ctx.output(0), yv);
}

LUMEN_REGISTER_KERNEL("reference", "rotate_half_mix", rotate_half_mix, DType::Float32,
                      DType::Float64);

}  // namespace
}  // namespace lumen
