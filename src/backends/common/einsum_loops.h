// Einsum as a loop over every combination of label values, shared by the reference backend and
// the CPU's einsum for the dtypes its GEMM lowering (kernels/einsum.cc, float32) leaves out.
#pragma once

#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/einsum_labels.h"
#include "core/kernel.h"

namespace lumen::einsum_loops {

// Loops over every combination of label values; each adds the product of the inputs' elements at
// that combination to the output element it names. Repeated labels in one term read diagonals.
template <class T>
void einsum_typed(KernelContext &ctx) {
  const EinsumLabels parsed = einsum_labels(ctx);
  const std::vector<std::vector<int>> &in_labels = parsed.inputs;
  const std::vector<int> &out_labels = parsed.output;
  const std::vector<int64_t> &label_dims = parsed.dims;
  // The labels that occur, outputs first so the output offset is a prefix of the loop index.
  std::vector<int> labels = out_labels;
  std::vector<bool> used(label_dims.size(), false);
  for (int l : out_labels) used[static_cast<size_t>(l)] = true;
  for (const auto &term : in_labels)
    for (int l : term)
      if (!used[static_cast<size_t>(l)]) {
        used[static_cast<size_t>(l)] = true;
        labels.push_back(l);
      }
  // Per input: the stride each loop label moves it by (0 where absent or broadcast).
  std::vector<std::vector<int64_t>> strides(in_labels.size(),
                                            std::vector<int64_t>(label_dims.size(), 0));
  for (size_t k = 0; k < in_labels.size(); ++k) {
    const std::vector<int64_t> s = contiguous_strides(ctx.input(k).shape());
    for (size_t d = 0; d < in_labels[k].size(); ++d)
      if (ctx.input(k).shape()[d] != 1 || label_dims[static_cast<size_t>(in_labels[k][d])] == 1)
        strides[k][static_cast<size_t>(in_labels[k][d])] += s[d];
  }
  using C = bin::Compute<T>;  // float for the 16-bit float types
  Tensor &y = ctx.output(0);
  std::vector<C> acc(static_cast<size_t>(y.numel()), C(0));
  int64_t total = 1;
  for (int l : labels) total = checked_mul(total, label_dims[static_cast<size_t>(l)]);
  std::vector<int64_t> value(labels.size(), 0);
  for (int64_t it = 0; it < total; ++it) {
    int64_t rem = it;
    for (size_t j = labels.size(); j-- > 0;) {
      const int64_t dim = label_dims[static_cast<size_t>(labels[j])];
      value[j] = rem % dim;
      rem /= dim;
    }
    int64_t out = 0;
    for (size_t j = 0; j < out_labels.size(); ++j)
      out = out * label_dims[static_cast<size_t>(labels[j])] + value[j];
    C prod = C(1);
    for (size_t k = 0; k < in_labels.size(); ++k) {
      int64_t off = 0;
      for (size_t j = 0; j < labels.size(); ++j)
        off += value[j] * strides[k][static_cast<size_t>(labels[j])];
      prod = C(prod * bin::load(ctx.input(k).data<T>()[off]));
    }
    acc[static_cast<size_t>(out)] = C(acc[static_cast<size_t>(out)] + prod);
  }
  T *py = y.data<T>();
  for (size_t i = 0; i < acc.size(); ++i) py[i] = bin::store<T>(acc[i]);
}

}  // namespace lumen::einsum_loops
