// Tensor shapes. Dimensions are int64; in a graph a dimension may be kUnknownDim until run time.
// Element counts and byte sizes are computed with overflow checks.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace lumen {

inline constexpr int64_t kUnknownDim = -1;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t &operator[](size_t i) { return dims_[i]; }
  const std::vector<int64_t> &dims() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  // True when every dimension is known (>= 0).
  bool is_static() const;
  // Product of the dimensions; throws lumen::Error if a dimension is unknown/negative or the
  // product overflows.
  int64_t numel() const;
  // Maps a possibly negative axis into [0, rank); throws naming `what` when out of range.
  size_t normalize_axis(int64_t axis, const char *what = "axis") const;

  std::string to_string() const;  // "[1, 3, 224, 224]", unknown dims print as "?"
  bool operator==(const Shape &other) const = default;

 private:
  std::vector<int64_t> dims_;
};

// A shape as far as it is known before run time: static dims as numbers, the others kUnknownDim
// with a name in `names` (the graph's symbolic input dims and expressions of them: "batch",
// "seq+1", "2*seq", "batch*seq", "height/32"; "" where none fits).
struct SymbolicShape {
  Shape dims;
  std::vector<std::string> names;  // one per dim
  std::string to_string() const;   // "[batch, seq, 768]", unnamed unknown dims print as "?"
  bool operator==(const SymbolicShape &other) const = default;
};

// Row-major strides, in elements.
std::vector<int64_t> contiguous_strides(const Shape &shape);

}  // namespace lumen
