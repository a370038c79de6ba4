// Strided iteration for NumPy broadcasting of two contiguous inputs into a contiguous output.
//
// BroadcastLoop collapses the problem first: output dims of size 1 are dropped and neighbouring
// dims are merged whenever both inputs walk them as one, so [2,3,4]+[2,3,4] becomes one run of 24
// and [2,3,4]+[4] becomes 6 rows of 4 where b restarts each row. The innermost dim then has input
// strides of 1 (walks the input) or 0 (repeats one element), which is what the fast loops branch
// on. Everything lives in fixed-size arrays, so planning a small call does not touch the heap.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "lumen/shape.h"

namespace lumen {

inline constexpr size_t kMaxBroadcastRank = 12;

class BroadcastLoop {
 public:
  // False when a shape has more than kMaxBroadcastRank dims.
  bool init(const Shape &a, const Shape &b, const Shape &out) {
    const size_t r = out.rank();
    if (r > kMaxBroadcastRank) return false;
    std::array<int64_t, kMaxBroadcastRank> sa{}, sb{};
    strides(a, r, sa);
    strides(b, r, sb);
    rank_ = 0;
    for (size_t i = 0; i < r; ++i) {
      if (out[i] == 1) continue;
      if (rank_ > 0 && sa_[rank_ - 1] == sa[i] * out[i] && sb_[rank_ - 1] == sb[i] * out[i]) {
        dims_[rank_ - 1] *= out[i];
        sa_[rank_ - 1] = sa[i];
        sb_[rank_ - 1] = sb[i];
      } else {
        dims_[rank_] = out[i];
        sa_[rank_] = sa[i];
        sb_[rank_] = sb[i];
        ++rank_;
      }
    }
    if (rank_ == 0) {  // a single element
      dims_[0] = 1;
      sa_[0] = sb_[0] = 0;
      rank_ = 1;
    }
    return true;
  }

  bool a_walks() const { return sa_[rank_ - 1] != 0; }
  bool b_walks() const { return sb_[rank_ - 1] != 0; }

  // fn(out_offset, a_offset, b_offset, len) for the runs covering output elements [begin, end).
  template <class Fn>
  void for_range(int64_t begin, int64_t end, Fn &&fn) const {
    const size_t outer = rank_ - 1;
    const int64_t inner = dims_[outer];
    std::array<int64_t, kMaxBroadcastRank> index{};
    int64_t row = begin / inner, col = begin % inner, a = 0, b = 0;
    for (size_t d = outer; d-- > 0;) {
      index[d] = row % dims_[d];
      row /= dims_[d];
      a += index[d] * sa_[d];
      b += index[d] * sb_[d];
    }
    while (begin < end) {
      const int64_t len = std::min(inner - col, end - begin);
      fn(begin, a + col * sa_[outer], b + col * sb_[outer], len);
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
  // Element strides of contiguous `in` in the index space of a rank-r output (0 where broadcast).
  static void strides(const Shape &in, size_t r, std::array<int64_t, kMaxBroadcastRank> &s) {
    const size_t lead = r - in.rank();
    int64_t stride = 1;
    for (size_t i = in.rank(); i-- > 0;) {
      s[lead + i] = in[i] != 1 ? stride : 0;
      stride *= in[i];
    }
  }

  size_t rank_ = 0;
  std::array<int64_t, kMaxBroadcastRank> dims_{}, sa_{}, sb_{};
};

}  // namespace lumen
