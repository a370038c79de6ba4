// A growable float buffer whose data starts on a 64-byte boundary (aligned vector loads of packed
// weights and of kernel scratch); growing zero-fills it, shrinking keeps it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lumen::cpu {

class AlignedFloats {
 public:
  explicit AlignedFloats(size_t count = 0) { resize(count); }
  AlignedFloats(const AlignedFloats &) = delete;  // data_ points into storage_
  AlignedFloats &operator=(const AlignedFloats &) = delete;
  // Room for at least `count` floats from data().
  void resize(size_t count) {
    if (count + kSlack <= storage_.size()) return;
    storage_.assign(count + kSlack, 0.0f);
    const auto address = reinterpret_cast<uintptr_t>(storage_.data());
    data_ = storage_.data() + ((64 - address % 64) % 64) / sizeof(float);
  }
  float *data() { return data_; }
  const float *data() const { return data_; }
  // Floats from data() to the end of the buffer: at least the largest count resized to.
  size_t capacity() const {
    return storage_.empty() ? 0 : storage_.size() - static_cast<size_t>(data_ - storage_.data());
  }

 private:
  static constexpr size_t kSlack = 16;  // floats of the first 64 bytes, skipped to align
  std::vector<float> storage_;
  float *data_ = nullptr;
};

}  // namespace lumen::cpu
