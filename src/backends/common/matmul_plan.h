// The shape of a NumPy-style matmul A @ B as kernels need it: the matrix sizes and, per output
// batch index, which matrix of A and of B it multiplies (batch dims broadcast). Shared by the
// float and integer matmul kernels of every backend so they agree on what broadcasting means.
#pragma once

#include <algorithm>
#include <vector>

#include "core/kernel.h"

namespace lumen {

struct MatmulPlan {
  int64_t m = 1, k = 1, n = 1;  // A is [.., m, k] (1-D: [k]), B is [.., k, n] (1-D: [k])
  std::vector<int64_t> a, b;    // per output batch: matrix index in A, in B
  bool a_dense = true;          // a[t] == t: A's batch dims are the output's
  bool b_constant = true;       // b[t] == 0: one matrix of B serves every batch
};

// Throws naming the op and node when the inner dimensions differ.
inline MatmulPlan plan_matmul(const KernelContext &ctx, const Shape &sa, const Shape &sb) {
  MatmulPlan plan;
  plan.m = sa.rank() >= 2 ? sa[sa.rank() - 2] : 1;
  plan.k = sa[sa.rank() - 1];
  plan.n = sb.rank() >= 2 ? sb[sb.rank() - 1] : 1;
  if (plan.k != (sb.rank() >= 2 ? sb[sb.rank() - 2] : sb[0]))
    ctx.fail("inner dimensions do not match: ", sa.to_string(), " @ ", sb.to_string());
  const size_t ba = sa.rank() > 2 ? sa.rank() - 2 : 0, bb = sb.rank() > 2 ? sb.rank() - 2 : 0;
  const size_t rank = std::max(ba, bb);
  std::vector<int64_t> da(rank, 1), db(rank, 1), out(rank);
  for (size_t i = 0; i < ba; ++i) da[rank - ba + i] = sa[i];
  for (size_t i = 0; i < bb; ++i) db[rank - bb + i] = sb[i];
  int64_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    out[i] = da[i] == 1 ? db[i] : da[i];
    count = checked_mul(count, out[i], "matmul batch count");
  }
  plan.a.resize(static_cast<size_t>(count));
  plan.b.resize(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) {
    // Decompose t into an index over the output batch dims, recompose it over each operand's.
    int64_t rest = t, oa = 0, ob = 0, sa_stride = 1, sb_stride = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t idx = rest % out[i];
      rest /= out[i];
      if (da[i] != 1) oa += idx * sa_stride;
      if (db[i] != 1) ob += idx * sb_stride;
      sa_stride *= da[i];
      sb_stride *= db[i];
    }
    plan.a[t] = oa;
    plan.b[t] = ob;
    plan.a_dense = plan.a_dense && oa == t;
    plan.b_constant = plan.b_constant && ob == 0;
  }
  return plan;
}

}  // namespace lumen
