// Strided iteration for NumPy broadcasting of two contiguous inputs into a contiguous output.
//
// BroadcastLoop collapses the problem first: output dims of size 1 are dropped and neighbouring
// dims are merged whenever both inputs walk them as one, so [2,3,4]+[2,3,4] becomes one run of 24
// and [2,3,4]+[4] becomes 6 rows of 4 where b restarts each row. The innermost dim then has input
// strides of 1 (walks the input) or 0 (repeats one element), which is what the fast loops branch
// on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "lumen/shape.h"

namespace lumen {

// Element strides of contiguous `in` seen in the index space of `out` (right-aligned; a dim of 1
// broadcast against a larger one gets stride 0). `in` must broadcast to `out`.
inline std::vector<int64_t> broadcast_strides(const Shape &in, const Shape &out) {
  std::vector<int64_t> strides(out.rank(), 0);
  const size_t lead = out.rank() - in.rank();
  int64_t stride = 1;
  for (size_t i = in.rank(); i-- > 0;) {
    if (in[i] != 1) strides[lead + i] = stride;
    stride *= in[i];
  }
  return strides;
}

class BroadcastLoop {
 public:
  // `out` is the broadcast of `a` and `b`, with numel > 0.
  BroadcastLoop(const Shape &a, const Shape &b, const Shape &out) {
    const std::vector<int64_t> sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
    for (size_t i = 0; i < out.rank(); ++i) {
      if (out[i] == 1) continue;
      if (!dims_.empty() && sa_.back() == sa[i] * out[i] && sb_.back() == sb[i] * out[i]) {
        dims_.back() *= out[i];
        sa_.back() = sa[i];
        sb_.back() = sb[i];
      } else {
        dims_.push_back(out[i]);
        sa_.push_back(sa[i]);
        sb_.push_back(sb[i]);
      }
    }
    if (dims_.empty()) {  // every dim is 1 (or a scalar): one element
      dims_.push_back(1);
      sa_.push_back(0);
      sb_.push_back(0);
    }
  }

  // Stride (0 or 1) of each input along the innermost collapsed dim.
  int64_t a_inner_stride() const { return sa_.back(); }
  int64_t b_inner_stride() const { return sb_.back(); }

  // Calls fn(out_offset, a_offset, b_offset, len) for runs covering output elements [begin, end)
  // in order; within a run the output advances by 1 and the inputs by their inner strides.
  template <class Fn>
  void for_range(int64_t begin, int64_t end, Fn &&fn) const {
    if (begin >= end) return;
    const size_t outer = dims_.size() - 1;
    const int64_t inner = dims_.back();
    std::vector<int64_t> index(outer);
    int64_t row = begin / inner, col = begin % inner, a = 0, b = 0;
    for (size_t d = outer; d-- > 0;) {
      index[d] = row % dims_[d];
      row /= dims_[d];
      a += index[d] * sa_[d];
      b += index[d] * sb_[d];
    }
    while (begin < end) {
      const int64_t len = std::min(inner - col, end - begin);
      fn(begin, a + col * sa_.back(), b + col * sb_.back(), len);
      begin += len;
      col = 0;
      for (size_t d = outer; d-- > 0;) {
        a += sa_[d];
        b += sb_[d];
        if (++index[d] < dims_[d]) break;
        a -= sa_[d] * dims_[d];
        b -= sb_[d] * dims_[d];
        index[d] = 0;
      }
    }
  }

 private:
  std::vector<int64_t> dims_, sa_, sb_;
};

}  // namespace lumen
