// The shapes of GatherND and ScatterND as ONNX defines them, checked once for every backend's
// kernel: the last dim of indices (m) addresses m dims of data after the batch dims; what
// follows them is one slice per index tuple.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/kernel.h"

namespace lumen {

// Product of dims [from, to) of s.
inline int64_t dims_product(const Shape &s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

struct GatherNdGeometry {
  size_t b, m;                 // batch dims, dims one index tuple addresses
  int64_t batches, per_batch;  // index tuples: batches x per_batch
  size_t slice, data_batch;    // bytes of one slice and of one batch of data
};

inline GatherNdGeometry gather_nd_geometry(const KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  const Tensor &y = ctx.output(0);
  GatherNdGeometry g;
  g.b = static_cast<size_t>(ctx.attrs.get_int("batch_dims", 0));
  const size_t r = data.rank(), q = idx.rank();
  if (q < 1 || g.b >= std::min(q, r)) ctx.fail("bad batch_dims ", g.b);
  g.m = static_cast<size_t>(idx.shape()[q - 1]);
  if (g.m < 1 || g.b + g.m > r) ctx.fail("bad last dim of indices ", idx.shape().to_string());
  g.batches = dims_product(idx.shape(), 0, g.b);
  g.per_batch = dims_product(idx.shape(), g.b, q - 1);
  g.slice =
      static_cast<size_t>(dims_product(data.shape(), g.b + g.m, r)) * dtype_size(data.dtype());
  g.data_batch = static_cast<size_t>(dims_product(data.shape(), g.b, g.b + g.m)) * g.slice;
  if (static_cast<size_t>(g.batches * g.per_batch) * g.slice != y.nbytes())
    ctx.fail("output ", y.shape().to_string(), " does not match data ", data.shape().to_string(),
             " and indices ", idx.shape().to_string());
  return g;
}

struct ScatterNdGeometry {
  size_t k;              // leading data dims one index tuple addresses
  int64_t count, slice;  // index tuples, and elements of data (and updates) per tuple
};

inline ScatterNdGeometry scatter_nd_geometry(const KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  const Tensor &y = ctx.output(0);
  const size_t r = data.rank(), q = idx.rank();
  if (q < 1 || y.shape() != data.shape() || upd.dtype() != data.dtype())
    ctx.fail("data ", data.shape().to_string(), ", indices ", idx.shape().to_string(),
             " and updates ", upd.shape().to_string(), " do not fit");
  ScatterNdGeometry g;
  g.k = static_cast<size_t>(idx.shape()[q - 1]);
  if (g.k < 1 || g.k > r) ctx.fail("bad last dim of indices ", idx.shape().to_string());
  g.count = dims_product(idx.shape(), 0, q - 1);
  g.slice = dims_product(data.shape(), g.k, r);
  if (checked_mul(g.count, g.slice) != upd.numel())
    ctx.fail("updates ", upd.shape().to_string(), " do not fit indices ", idx.shape().to_string(),
             " and data ", data.shape().to_string());
  return g;
}

}  // namespace lumen
