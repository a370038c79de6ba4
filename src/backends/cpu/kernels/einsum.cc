// CPU Einsum (float32), lowered to the packed GEMM. Operands are contracted left to right; in each
// contraction every label is a batch label (in both operands and needed later), a contracted one
// (in both, not needed later), or belongs to one operand only: kept as a row (m) or column (n) of
// the product if needed later, summed away first otherwise. Each operand is used in place when
// its labels are already in [batch, m, contracted] / [batch, contracted, m] order (B likewise, with
// n), and permuted into that order otherwise; the product of every batch index is one GEMM,
// batches shared out over the pool when each GEMM is too small to split. The result is permuted
// into the output's label order. An operand with a repeated label (a diagonal) or a dim of 1 that
// broadcasts against a larger one is first copied with each label once, at its full extent.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "backends/common/einsum_labels.h"
#include "backends/common/einsum_loops.h"
#include "backends/cpu/gemm/sgemm.h"
#include "backends/cpu/kernels/permute.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// A float32 tensor (an input in place, or an intermediate it owns) and the label of each dim.
struct Operand {
  Tensor owned;
  const float *data = nullptr;
  std::vector<int> labels;
};

bool contains(const std::vector<int> &labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

int64_t extent(const std::vector<int> &labels, const std::vector<int64_t> &label_dims) {
  int64_t n = 1;
  for (int l : labels) n = checked_mul(n, label_dims[static_cast<size_t>(l)]);
  return n;
}

// dst (contiguous, labels `order`) = src (contiguous, labels `from`), a permutation of it.
void permute(ThreadPool &pool, const float *src, const std::vector<int> &from, float *dst,
             const std::vector<int> &order, const std::vector<int64_t> &label_dims) {
  std::vector<int64_t> dims, perm;
  for (int l : from) dims.push_back(label_dims[static_cast<size_t>(l)]);
  for (int l : order) perm.push_back(std::find(from.begin(), from.end(), l) - from.begin());
  cpu::permute(pool, src, dst, Shape(dims), perm, sizeof(float));
}

// `x` summed over its labels not in `order`, its other labels permuted into `order`.
Operand sum_and_permute(ThreadPool &pool, const Operand &x, const std::vector<int> &order,
                        const std::vector<int64_t> &label_dims) {
  std::vector<int> summed;
  for (int l : x.labels)
    if (!contains(order, l)) summed.push_back(l);
  if (summed.empty() && order == x.labels) return {Tensor(), x.data, x.labels};
  std::vector<int> all = order;
  all.insert(all.end(), summed.begin(), summed.end());
  const int64_t rows = extent(order, label_dims), cols = extent(summed, label_dims);
  Tensor permuted = Tensor::empty(Shape{rows, cols}, DType::Float32);
  permute(pool, x.data, x.labels, permuted.data<float>(), all, label_dims);
  if (summed.empty()) return {permuted, permuted.data<float>(), order};
  Tensor sums = Tensor::empty(Shape{rows}, DType::Float32);
  const float *p = permuted.data<float>();
  float *s = sums.data<float>();
  pool.parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)),
                    [&](int64_t r0, int64_t r1) {
                      for (int64_t i = r0; i < r1; ++i)
                        s[i] = std::accumulate(p + i * cols, p + (i + 1) * cols, 0.0f);
                    });
  return {sums, sums.data<float>(), order};
}

std::vector<int> concat(std::vector<int> a, const std::vector<int> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// a x b over their shared labels; `later` are the labels needed after this contraction.
Operand contract(ThreadPool &pool, const Operand &a_in, const Operand &b_in,
                 const std::vector<int> &later, const std::vector<int64_t> &label_dims) {
  std::vector<int> batch, m, con, n;
  for (int l : a_in.labels) {
    if (!contains(b_in.labels, l)) {
      if (contains(later, l)) m.push_back(l);
    } else {
      (contains(later, l) ? batch : con).push_back(l);
    }
  }
  for (int l : b_in.labels)
    if (!contains(a_in.labels, l) && contains(later, l)) n.push_back(l);
  // Each operand in one of its two GEMM layouts: in place when it already is.
  const auto arrange = [&](const Operand &x, const std::vector<int> &direct,
                           const std::vector<int> &transposed, bool &trans) {
    trans = x.labels == transposed && x.labels != direct;
    if (x.labels == direct || trans) return Operand{Tensor(), x.data, x.labels};
    return sum_and_permute(pool, x, direct, label_dims);
  };
  bool a_trans = false, b_trans = false;
  const Operand a =
      arrange(a_in, concat(concat(batch, m), con), concat(concat(batch, con), m), a_trans);
  const Operand b =
      arrange(b_in, concat(concat(batch, con), n), concat(concat(batch, n), con), b_trans);
  const int64_t batches = extent(batch, label_dims), rows = extent(m, label_dims);
  const int64_t cols = extent(n, label_dims), depth = extent(con, label_dims);
  Operand c;
  c.labels = concat(concat(batch, m), n);
  c.owned = Tensor::empty(Shape{batches, rows, cols}, DType::Float32);
  c.data = c.owned.data<float>();
  float *out = c.owned.data<float>();
  const int64_t threads = cpu::gemm_threads(pool, rows, cols, depth);
  const auto gemm = [&](int64_t i, int64_t max_threads) {
    const cpu::StridedA op_a(a.data + i * rows * depth, a_trans ? rows : depth, a_trans);
    const cpu::StridedB op_b(b.data + i * depth * cols, b_trans ? depth : cols, b_trans);
    cpu::GemmOptions options;
    options.max_threads = max_threads;
    cpu::sgemm(pool, rows, cols, depth, op_a, op_b, out + i * rows * cols, cols, options);
  };
  if (batches > 1 && threads < static_cast<int64_t>(pool.size())) {
    pool.parallel_for(batches, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) gemm(i, 1);
    });
  } else {
    for (int64_t i = 0; i < batches; ++i) gemm(i, 0);
  }
  return c;
}

// The operand x with labels `labels` as one with each label once and at its full extent: itself
// where it is so already; otherwise a copy that takes the diagonal of a repeated label ("ii":
// the elements whose indices agree) and repeats a dim of 1 that broadcasts against a larger one.
Operand distinct_labels(const Tensor &x, const std::vector<int> &labels,
                        const std::vector<int64_t> &label_dims) {
  std::vector<int> distinct;
  std::vector<int64_t> step;  // per distinct label: x's elements per index step (0: broadcast)
  int64_t stride = 1;
  bool copy = false;
  for (size_t d = labels.size(); d-- > 0;) {
    const int l = labels[d];
    const int64_t dim = x.shape()[d], full = label_dims[static_cast<size_t>(l)];
    auto at = std::find(distinct.begin(), distinct.end(), l);
    copy = copy || at != distinct.end() || dim != full;
    if (at == distinct.end()) {
      distinct.insert(distinct.begin(), l);
      step.insert(step.begin(), 0);
      at = distinct.begin();
    }
    if (dim != 1 || full == 1) step[size_t(at - distinct.begin())] += stride;
    stride *= dim;
  }
  if (!copy) return {Tensor(), x.data<float>(), labels};
  const int64_t count = extent(distinct, label_dims);
  Operand out{Tensor::empty(Shape{count}, DType::Float32), nullptr, distinct};
  float *dst = out.owned.data<float>();
  const float *src = x.data<float>();
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, from = 0;
    for (size_t k = distinct.size(); k-- > 0;) {
      const int64_t dim = label_dims[static_cast<size_t>(distinct[k])];
      from += (rest % dim) * step[k];
      rest /= dim;
    }
    dst[i] = src[from];
  }
  out.data = dst;
  return out;
}

void einsum(KernelContext &ctx) {
  const EinsumLabels parsed = einsum_labels(ctx);
  const std::vector<std::vector<int>> &in_labels = parsed.inputs;
  const std::vector<int> &out_labels = parsed.output;
  const std::vector<int64_t> &label_dims = parsed.dims;
  Tensor &y = ctx.output(0);
  if (y.numel() == 0) return;
  Operand acc = distinct_labels(ctx.input(0), in_labels[0], label_dims);
  for (size_t i = 1; i < in_labels.size(); ++i) {
    std::vector<int> later = out_labels;  // needed by the output or a later operand
    for (size_t j = i + 1; j < in_labels.size(); ++j) later = concat(later, in_labels[j]);
    acc = contract(ctx.pool, acc, distinct_labels(ctx.input(i), in_labels[i], label_dims), later,
                   label_dims);
  }
  bool sums = false;
  for (int l : acc.labels) sums = sums || !contains(out_labels, l);
  if (!sums)
    return permute(ctx.pool, acc.data, acc.labels, y.data<float>(), out_labels, label_dims);
  const Operand result = sum_and_permute(ctx.pool, acc, out_labels, label_dims);
  std::memcpy(y.data<float>(), result.data, static_cast<size_t>(y.numel()) * sizeof(float));
}

LUMEN_REGISTER_KERNEL("cpu", "einsum", einsum, DType::Float32);
// Other dtypes (shape and index arithmetic in int64, float64 models) by the plain loops.
LUMEN_REGISTER_KERNEL("cpu", "einsum", einsum_loops::einsum_typed<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "einsum", einsum_loops::einsum_typed<int32_t>, DType::Int32);
LUMEN_REGISTER_KERNEL("cpu", "einsum", einsum_loops::einsum_typed<int64_t>, DType::Int64);

}  // namespace
}  // namespace lumen
