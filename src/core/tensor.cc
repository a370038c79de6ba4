#include "lumen/tensor.h"

#include "lumen/container.h"
#include "lumen/memory_budget.h"

#include <cmath>
#include <cstring>
#include <random>

namespace lumen {

Tensor Tensor::empty(const Shape &shape, DType dtype, Allocator *allocator) {
  const int64_t n = shape.numel();
  if (is_container(dtype))
    fail("Tensor::empty: a ", dtype_name(dtype), " is made with make_sequence/make_optional");
  if (dtype == DType::String) {  // constructed strings (empty), destroyed with the last view
    checked_mul(n, static_cast<int64_t>(sizeof(std::string)), "tensor bytes");
    auto strings = std::make_shared<std::vector<std::string>>(static_cast<size_t>(n));
    return wrap(strings->data(), dtype, shape, {}, [strings] {});
  }
  const int64_t bytes = checked_mul(n, static_cast<int64_t>(dtype_size(dtype)), "tensor bytes");
  if (static_cast<size_t>(bytes) > memory_budget())  // the message only when it fails
    check_memory_budget(static_cast<size_t>(bytes),
                        str("a ", dtype_name(dtype), " tensor of shape ", shape.to_string()));
  Tensor t;
  t.buffer_ = (allocator ? *allocator : host_allocator()).allocate(static_cast<size_t>(bytes));
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  return t;
}

Tensor Tensor::zeros(const Shape &shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  if (dtype != DType::String) std::memset(t.raw_data(), 0, t.nbytes());  // strings start empty
  return t;
}

Tensor Tensor::randn(const Shape &shape, uint64_t seed) {
  Tensor t = empty(shape, DType::Float32);
  float *out = t.data<float>();
  std::mt19937_64 rng(seed);
  // Box-Muller by hand: std::normal_distribution differs between standard libraries.
  const double scale = 1.0 / 18446744073709551616.0;  // 2^-64
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = (static_cast<double>(rng()) + 1.0) * scale;
    const double u2 = static_cast<double>(rng()) * scale;
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(2 * M_PI * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(2 * M_PI * u2));
  }
  return t;
}

Tensor Tensor::wrap(void *data, DType dtype, const Shape &shape, std::vector<int64_t> strides,
                    std::function<void()> keep_alive, Device device) {
  if (strides.empty()) strides = contiguous_strides(shape);
  if (strides.size() != shape.rank())
    fail("wrap: ", strides.size(), " strides for shape ", shape.to_string());
  // The extent the view can touch, for the buffer's size (negative strides are not supported).
  int64_t extent = shape.numel() == 0 ? 0 : 1;
  for (size_t i = 0; i < shape.rank() && extent; ++i) {
    if (strides[i] < 0) fail("wrap: negative strides are not supported");
    extent = checked_add(extent, checked_mul(shape[i] - 1, strides[i]), "wrapped extent");
  }
  Tensor t;
  t.buffer_ = std::make_shared<Buffer>(
      data, static_cast<size_t>(checked_mul(extent, static_cast<int64_t>(dtype_size(dtype)))),
      device, [keep = std::move(keep_alive)](void *) {
        if (keep) keep();
      });
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = std::move(strides);
  return t;
}

Device Tensor::device() const {
  return buffer_ ? buffer_->device() : kHostDevice;
}

void *Tensor::raw_data() const {
  if (!buffer_) fail("access to an undefined tensor");
  return static_cast<char *>(buffer_->data()) + byte_offset_;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.rank(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = empty(shape_, dtype_);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::clone() const {
  if (is_container(dtype_)) return *this;  // immutable: sharing is copying
  Tensor out = empty(shape_, dtype_);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::reshape(const Shape &shape) const {
  if (shape.numel() != numel())
    fail("cannot reshape ", shape_.to_string(), " (", numel(), " elements) to ", shape.to_string(),
         " (", shape.numel(), " elements)");
  Tensor out = contiguous();
  out.shape_ = shape;
  out.strides_ = contiguous_strides(shape);
  return out;
}

void Tensor::copy_from(const Tensor &src) {
  if (src.dtype_ != dtype_ || src.shape_ != shape_)
    fail("copy_from: source ", src.to_string(), " does not match destination ", to_string());
  if (!device().is_host() || !src.device().is_host())
    fail("copy_from: only host tensors; use the backend's copy for device memory");
  if (is_container(dtype_)) fail("copy_from: a ", dtype_name(dtype_), " cannot be written");
  const size_t elem = dtype_size(dtype_);
  const int64_t n = numel();
  if (n == 0) return;
  auto *dst_base = static_cast<char *>(raw_data());
  const auto *src_base = static_cast<const char *>(src.raw_data());
  // Strings are objects: assigned one by one, never moved as bytes.
  auto copy_element = [&](int64_t dst_off, int64_t src_off) {
    if (dtype_ == DType::String)
      reinterpret_cast<std::string *>(dst_base)[dst_off] =
          reinterpret_cast<const std::string *>(src_base)[src_off];
    else
      std::memcpy(dst_base + dst_off * elem, src_base + src_off * elem, elem);
  };
  if (dtype_ == DType::String && is_contiguous() && src.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) copy_element(i, i);
    return;
  }
  if (is_contiguous() && src.is_contiguous()) {
    std::memmove(dst_base, src_base, nbytes());
    return;
  }
  // Walk a multi-index over all dims but the last, copying the innermost row each step.
  const size_t rank = shape_.rank();
  const int64_t inner = rank ? shape_[rank - 1] : 1;
  const int64_t dst_inner_stride = rank ? strides_[rank - 1] : 1;
  const int64_t src_inner_stride = rank ? src.strides_[rank - 1] : 1;
  std::vector<int64_t> index(rank ? rank - 1 : 0, 0);
  for (int64_t row = 0, rows = n / inner; row < rows; ++row) {
    int64_t dst_off = 0, src_off = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      dst_off += index[d] * strides_[d];
      src_off += index[d] * src.strides_[d];
    }
    for (int64_t i = 0; i < inner; ++i)
      copy_element(dst_off + i * dst_inner_stride, src_off + i * src_inner_stride);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < shape_[d]) break;
      index[d] = 0;
    }
  }
}

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  return str("Tensor(", dtype_name(dtype_), ", ", shape_.to_string(), ")");
}

}  // namespace lumen
