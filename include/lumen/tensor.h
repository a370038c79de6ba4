// Tensor: dtype, shape, strides and a view into a shared Buffer. Copying a Tensor is cheap and
// shares the memory (like a NumPy view); clone() copies the data.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lumen/buffer.h"
#include "lumen/dtype.h"
#include "lumen/error.h"
#include "lumen/shape.h"

namespace lumen {

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // Contiguous, uninitialized tensor from `allocator` (default: the host allocator).
  static Tensor empty(const Shape &shape, DType dtype = DType::Float32,
                      Allocator *allocator = nullptr);
  static Tensor zeros(const Shape &shape, DType dtype = DType::Float32);
  // Normal(0, 1) float32 values from a fixed-seed generator: the same seed gives the same tensor.
  static Tensor randn(const Shape &shape, uint64_t seed = 0);
  // A tensor that holds a copy of `values`.
  template <class T>
  static Tensor from_vector(const Shape &shape, const std::vector<T> &values);

  // Wraps foreign host memory without copying. `strides` are in elements (empty = contiguous).
  // `keep_alive` runs when the last tensor viewing the memory dies.
  static Tensor wrap(void *data, DType dtype, const Shape &shape, std::vector<int64_t> strides,
                     std::function<void()> keep_alive, Device device = kHostDevice);

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  size_t rank() const { return shape_.rank(); }
  const std::vector<int64_t> &strides() const { return strides_; }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  Device device() const;
  const std::shared_ptr<Buffer> &buffer() const { return buffer_; }
  size_t byte_offset() const { return byte_offset_; }

  void *raw_data() const;
  // Typed access; throws if T does not match dtype().
  template <class T>
  T *data() const {
    if (dtype_of<T> != dtype_)
      fail("tensor holds ", dtype_name(dtype_), ", accessed as ", dtype_name(dtype_of<T>));
    return static_cast<T *>(raw_data());
  }

  bool is_contiguous() const;
  // This tensor if contiguous, else a contiguous copy.
  Tensor contiguous() const;
  Tensor clone() const;
  // A view with a new shape of the same element count (copies first if not contiguous).
  Tensor reshape(const Shape &shape) const;
  // Copies `src` (same shape and dtype, any strides) into this tensor's memory.
  void copy_from(const Tensor &src);

  std::string to_string() const;  // "Tensor(float32, [1, 10])"

 private:
  std::shared_ptr<Buffer> buffer_;
  size_t byte_offset_ = 0;
  DType dtype_ = DType::Float32;
  Shape shape_;
  std::vector<int64_t> strides_;
};

template <class T>
Tensor Tensor::from_vector(const Shape &shape, const std::vector<T> &values) {
  Tensor t = empty(shape, dtype_of<T>);
  if (static_cast<int64_t>(values.size()) != t.numel())
    fail("from_vector: ", values.size(), " values for shape ", shape.to_string());
  T *out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace lumen
