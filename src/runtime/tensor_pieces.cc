#include "runtime/tensor_pieces.h"

#include <cstring>
#include <string>

namespace lumen {
namespace {

// Copies `count` elements; strings are assigned as objects.
void copy_elements(const Tensor &dst, int64_t dst_off, const Tensor &src, int64_t src_off,
                   int64_t count) {
  if (dst.dtype() == DType::String) {
    const std::string *from = src.data<std::string>() + src_off;
    std::copy(from, from + count, dst.data<std::string>() + dst_off);
    return;
  }
  const auto elem = static_cast<int64_t>(dtype_size(dst.dtype()));
  std::memcpy(static_cast<char *>(dst.raw_data()) + dst_off * elem,
              static_cast<const char *>(src.raw_data()) + src_off * elem,
              static_cast<size_t>(count * elem));
}

// Elements before `axis` (outer) and after it (inner).
void split_dims(const Shape &shape, size_t axis, int64_t &outer, int64_t &inner) {
  outer = 1;
  inner = 1;
  for (size_t d = 0; d < shape.rank(); ++d)
    if (d < axis)
      outer *= shape[d];
    else if (d > axis)
      inner *= shape[d];
}

}  // namespace

Tensor slice_along(const Tensor &x, size_t axis, int64_t start, int64_t length) {
  const Tensor c = x.contiguous();
  std::vector<int64_t> dims = c.shape().dims();
  const int64_t total = dims.at(axis);
  if (start < 0 || length < 0 || start + length > total)
    fail("slice [", start, ", ", start + length, ") out of range for a dim of ", total);
  int64_t outer, inner;
  split_dims(c.shape(), axis, outer, inner);
  dims[axis] = length;
  Tensor out = Tensor::empty(Shape(dims), c.dtype());
  for (int64_t o = 0; o < outer; ++o)
    copy_elements(out, o * length * inner, c, (o * total + start) * inner, length * inner);
  return out;
}

Tensor concat_along(const std::vector<Tensor> &parts, size_t axis, const std::string &what) {
  if (parts.empty()) fail(what, ": nothing to concatenate");
  const Shape &first = parts[0].shape();
  if (axis >= first.rank()) fail(what, ": axis ", axis, " out of range for ", first.to_string());
  std::vector<int64_t> dims = first.dims();
  dims[axis] = 0;
  for (const Tensor &p : parts) {
    bool fits = p.dtype() == parts[0].dtype() && p.rank() == first.rank();
    for (size_t d = 0; fits && d < first.rank(); ++d) fits = d == axis || p.shape()[d] == first[d];
    if (!fits)
      fail(what, ": parts must agree except on axis ", axis, ": ", parts[0].to_string(), " and ",
           p.to_string());
    dims[axis] += p.shape()[axis];
  }
  Tensor out = Tensor::empty(Shape(dims), parts[0].dtype());
  int64_t outer, inner;
  split_dims(out.shape(), axis, outer, inner);
  int64_t offset = 0;  // along the axis
  for (const Tensor &p : parts) {
    const Tensor c = p.contiguous();
    const int64_t length = c.shape()[axis];
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(out, (o * dims[axis] + offset) * inner, c, o * length * inner, length * inner);
    offset += length;
  }
  return out;
}

Tensor unsqueeze_at(const Tensor &x, size_t axis) {
  std::vector<int64_t> dims = x.shape().dims();
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), 1);
  return x.reshape(Shape(dims));
}

Tensor squeeze_at(const Tensor &x, size_t axis) {
  std::vector<int64_t> dims = x.shape().dims();
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  return x.reshape(Shape(dims));
}

}  // namespace lumen
