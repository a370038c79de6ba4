// Element types. The enum is the one vocabulary shared by tensors, kernels, the graph and the
// importers; sizes and names come from one table in dtype.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lumen {

enum class DType : uint8_t {
  Float32,
  Float16,
  BFloat16,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  Bool,
};

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// Accepts the names dtype_name() prints ("float32", "int64", ...). Throws lumen::Error otherwise.
DType dtype_from_name(std::string_view name);
bool is_floating(DType dtype);
bool is_integral(DType dtype);

// Half-precision types are stored, not computed with, on the host: 16-bit payloads.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct DTypeOf<Float16> {
  static constexpr DType value = DType::Float16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::Int16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};
template <class T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace lumen
