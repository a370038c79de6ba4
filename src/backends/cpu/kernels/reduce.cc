// CPU reduce_sum / mean / max / min / sum_square / l1 / l2 / log_sum / log_sum_exp for float32 when
// the reduced dims form one contiguous block (the common cases: the last axis in transformers'
// layer norms and means, leading or middle axes, or everything). The input is viewed as [outer, n,
// inner]: inner == 1 reduces contiguous rows with independent lanes; otherwise rows of `inner`
// elements are combined element by element. Reduced axes that are not one block are permuted behind
// the kept ones first. Parallel over outer, or over chunks of one long row. Max and min propagate
// NaN, as the reference does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/kernels/permute.h"
#include "backends/cpu/row_reductions.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"
#include "graph/ops/reduce.h"

namespace lumen {
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per parallel chunk, roughly

enum class Kind { Sum, Mean, Max, Min, SumSquare, L1, L2, LogSum, LogSumExp };

// The reduction as an accumulator: start, take one value, merge two partial results, finish.
template <Kind K>
struct Reducer {
  static constexpr bool kMax = K == Kind::Max, kMin = K == Kind::Min;
  static float init() {
    if constexpr (kMax) return -std::numeric_limits<float>::infinity();
    if constexpr (kMin) return std::numeric_limits<float>::infinity();
    return 0.0f;
  }
  // Max/min keep a NaN once seen: it fails every comparison, so it is never replaced.
  static float merge(float a, float b) {
    if constexpr (kMax) return b > a || b != b ? b : a;
    if constexpr (kMin) return b < a || b != b ? b : a;
    return a + b;
  }
  static float take(float a, float v) {
    if constexpr (K == Kind::SumSquare || K == Kind::L2) return a + v * v;
    if constexpr (K == Kind::L1) return a + std::fabs(v);
    return merge(a, v);
  }
  static float finish(float a, float scale) {
    if constexpr (K == Kind::Mean) return a * scale;
    if constexpr (K == Kind::L2) return std::sqrt(a);
    if constexpr (K == Kind::LogSum) return std::log(a);
    return a;
  }
};

template <Kind K>
float reduce_row(const float *x, int64_t n) {
  using R = Reducer<K>;
  float result = 0;
  vec::run_best([&]() LUMEN_VEC_INLINE {
    // Independent lanes, local to the loop so they stay in vector registers.
    constexpr int kLanes = 32;
    float lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) lanes[l] = R::init();
    int64_t k = 0;
    for (; k + kLanes <= n; k += kLanes)
      for (int l = 0; l < kLanes; ++l) lanes[l] = R::take(lanes[l], x[k + l]);
    float tail = R::init();
    for (; k < n; ++k) tail = R::take(tail, x[k]);
    for (int l = 0; l < kLanes; ++l) tail = R::merge(tail, lanes[l]);
    result = tail;
  });
  return result;
}

// out[j] = the reduction of rows[k * inner + j] over k < n. Short rows (a channel-blocked image's
// eight lanes, reduced over its pixels) go through kStreams independent partial results in a
// local array: accumulating in `out` itself made each row wait for the previous row's store (the
// two might alias), 2x slower than onnxruntime's global pooling.
template <Kind K>
void reduce_rows(const float *rows, int64_t n, int64_t inner, float scale, float *out) {
  using R = Reducer<K>;
  constexpr int64_t kShort = 64, kStreams = 4;
  vec::run_best([&]() LUMEN_VEC_INLINE {
    if (inner > kShort) {
      for (int64_t j = 0; j < inner; ++j) out[j] = R::take(R::init(), rows[j]);
      for (int64_t k = 1; k < n; ++k) {
        const float *row = rows + k * inner;
        for (int64_t j = 0; j < inner; ++j) out[j] = R::take(out[j], row[j]);
      }
      for (int64_t j = 0; j < inner; ++j) out[j] = R::finish(out[j], scale);
      return;
    }
    float acc[kStreams][kShort];
    for (int64_t s = 0; s < kStreams; ++s)
      for (int64_t j = 0; j < inner; ++j) acc[s][j] = R::init();
    int64_t k = 0;
    for (; k + kStreams <= n; k += kStreams)
      for (int64_t s = 0; s < kStreams; ++s) {
        const float *row = rows + (k + s) * inner;
        for (int64_t j = 0; j < inner; ++j) acc[s][j] = R::take(acc[s][j], row[j]);
      }
    for (; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j) acc[0][j] = R::take(acc[0][j], rows[k * inner + j]);
    for (int64_t j = 0; j < inner; ++j)
      out[j] = R::finish(R::merge(R::merge(acc[0][j], acc[1][j]), R::merge(acc[2][j], acc[3][j])),
                         scale);
  });
}

// out[j] = log(sum_k exp(rows[k * inner + j])), shifted by the column's maximum so that no exp
// overflows; a NaN or infinite maximum is the result itself, as in the reference.
void log_sum_exp(const float *rows, int64_t n, int64_t inner, float *out) {
  if (inner == 1) {  // one contiguous row: the vectorized max and exp sum softmax uses
    vec::run_best([&]() LUMEN_VEC_INLINE {
      const float max = cpu::row_max(rows, n);  // skips NaN, which then makes the sum NaN
      *out = std::isfinite(max)
                 ? float(max + std::log(cpu::exp_sum<float, false>(rows, nullptr, n, max)))
                 : max;
    });
    return;
  }
  std::vector<float> max(static_cast<size_t>(inner), -std::numeric_limits<float>::infinity());
  std::vector<double> sum(static_cast<size_t>(inner), 0.0);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < inner; ++j) {
      const float v = rows[k * inner + j];
      max[j] = v > max[j] || v != v ? v : max[j];
    }
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < inner; ++j)
      if (std::isfinite(max[j])) sum[j] += std::exp(double(rows[k * inner + j] - max[j]));
  for (int64_t j = 0; j < inner; ++j)
    out[j] = std::isfinite(max[j]) ? float(max[j] + std::log(sum[j])) : max[j];
}

template <Kind K>
void reduce_f32(KernelContext &ctx) {
  using R = Reducer<K>;
  const Tensor &x = ctx.input(0);
  const Shape &shape = x.shape();
  const std::vector<int64_t> axes =
      ctx.has_input(1) ? ctx.input_ints(1, "axes") : ctx.attrs.get_ints("axes", {});
  std::vector<bool> mask;
  try {
    mask = reduce_detail::reduce_mask(axes, shape.rank(),
                                      ctx.attrs.get_int("noop_with_empty_axes", 0) != 0);
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  // The reduced dims (ignoring size-1 ones) must be one block for the [outer, n, inner] view.
  int first = -1, last = -1;
  bool block = true;
  for (size_t d = 0; d < mask.size(); ++d) {
    if (!mask[d] || shape[d] == 1) continue;
    if (first < 0) first = static_cast<int>(d);
    for (int g = last + 1; last >= 0 && g < static_cast<int>(d); ++g)
      if (!mask[static_cast<size_t>(g)] && shape[static_cast<size_t>(g)] != 1) block = false;
    last = static_cast<int>(d);
  }
  if (x.numel() == 0) {  // each output reduces an empty set: the reduction's value on it
    float empty = Reducer<K>::finish(Reducer<K>::init(), 1.0f);  // 0, -inf, inf; log(0), sqrt(0)
    if constexpr (K == Kind::Mean) empty = std::numeric_limits<float>::quiet_NaN();       // 0 / 0
    if constexpr (K == Kind::LogSumExp) empty = -std::numeric_limits<float>::infinity();  // log(0)
    std::fill_n(ctx.output(0).data<float>(), ctx.output(0).numel(), empty);
    return;
  }
  const float *px = x.data<float>();
  int64_t outer = 1, n = 1, inner = 1;
  Tensor permuted;
  if (!block) {
    // Scattered axes: the kept dims moved in front of the reduced ones, then rows are reduced.
    std::vector<int64_t> perm;
    for (int reduced = 0; reduced < 2; ++reduced)
      for (size_t d = 0; d < shape.rank(); ++d)
        if (mask[d] == (reduced == 1)) {
          perm.push_back(static_cast<int64_t>(d));
          (reduced ? n : outer) *= shape[d];
        }
    permuted = Tensor::empty(shape, DType::Float32);
    cpu::permute(ctx.pool, px, permuted.raw_data(), shape, perm, sizeof(float));
    px = permuted.data<float>();
  } else if (first < 0) {  // nothing of size > 1 reduced: every output element is one input element
    inner = x.numel();
  } else {
    for (size_t d = 0; d < shape.rank(); ++d) {
      if (static_cast<int>(d) < first) outer *= shape[d];
      if (static_cast<int>(d) >= first && static_cast<int>(d) <= last) n *= shape[d];
      if (static_cast<int>(d) > last) inner *= shape[d];
    }
  }
  int64_t count = 1;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) count *= shape[d];
  Tensor &y = ctx.output(0);
  if (y.numel() != outer * inner) ctx.fail("output ", y.shape().to_string(), " does not fit");
  const float scale = 1.0f / static_cast<float>(count);
  float *py = y.data<float>();
  if constexpr (K == Kind::LogSumExp) {
    ctx.pool.parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * inner, 1)),
                          [&](int64_t b, int64_t e) {
                            for (int64_t o = b; o < e; ++o)
                              log_sum_exp(px + o * n * inner, n, inner, py + o * inner);
                          });
    return;
  }
  if (inner == 1 && outer == 1 && n >= 2 * kGrain) {  // one long row: split it over the pool
    const int64_t chunks = std::min<int64_t>(n / kGrain, 64);
    std::vector<float> partial(static_cast<size_t>(chunks));
    ctx.pool.parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
        partial[static_cast<size_t>(c)] = reduce_row<K>(px + begin, end - begin);
      }
    });
    float total = partial[0];
    for (size_t c = 1; c < partial.size(); ++c) total = R::merge(total, partial[c]);
    py[0] = R::finish(total, scale);
    return;
  }
  if (inner == 1) {
    ctx.pool.parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)),
                          [&](int64_t b, int64_t e) {
                            for (int64_t o = b; o < e; ++o)
                              py[o] = R::finish(reduce_row<K>(px + o * n, n), scale);
                          });
    return;
  }
  ctx.pool.parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * inner, 1)),
                        [&](int64_t b, int64_t e) {
                          for (int64_t o = b; o < e; ++o)
                            reduce_rows<K>(px + o * n * inner, n, inner, scale, py + o * inner);
                        });
}

LUMEN_REGISTER_KERNEL("cpu", "reduce_sum", reduce_f32<Kind::Sum>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_mean", reduce_f32<Kind::Mean>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_max", reduce_f32<Kind::Max>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_min", reduce_f32<Kind::Min>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_sum_square", reduce_f32<Kind::SumSquare>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_l1", reduce_f32<Kind::L1>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_l2", reduce_f32<Kind::L2>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_log_sum", reduce_f32<Kind::LogSum>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "reduce_log_sum_exp", reduce_f32<Kind::LogSumExp>, DType::Float32);

}  // namespace
}  // namespace lumen
