#include "lumen/shape.h"

#include "lumen/error.h"

namespace lumen {

bool Shape::is_static() const {
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (d < 0) fail("shape ", to_string(), " has an unknown or negative dimension");
    n = checked_mul(n, d, "element count");
  }
  return n;
}

size_t Shape::normalize_axis(int64_t axis, const char *what) const {
  const auto r = static_cast<int64_t>(rank());
  if (axis < -r || axis >= r)
    fail(what, " ", axis, " is out of range for rank ", r, " (shape ", to_string(), ")");
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

std::string SymbolicShape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.rank(); ++i) {
    if (i) s += ", ";
    const bool named = i < names.size() && !names[i].empty();
    s += dims[i] >= 0 ? std::to_string(dims[i]) : named ? names[i] : "?";
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const Shape &shape) {
  std::vector<int64_t> strides(shape.rank());
  int64_t stride = 1;
  for (size_t i = shape.rank(); i-- > 0;) {
    strides[i] = stride;
    stride = checked_mul(stride, std::max<int64_t>(shape[i], 1), "stride");
  }
  return strides;
}

}  // namespace lumen
