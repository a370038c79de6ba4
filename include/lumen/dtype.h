// Element types. The enum is the one vocabulary shared by tensors, kernels, the graph and the
// importers; sizes and names come from one table in dtype.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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
  // Appended so the values above keep their numbers.
  UInt16,
  UInt32,
  UInt64,
  // Narrow types (ONNX FLOAT8*, INT4/UINT4, FLOAT4E2M1, INT2/UINT2, FLOAT8E8M0). Every element
  // takes one byte in Lumen memory (sub-byte types are unpacked), like ml_dtypes' NumPy types.
  Float8E4M3FN,
  Float8E4M3FNUZ,
  Float8E5M2,
  Float8E5M2FNUZ,
  UInt4,
  Int4,
  Float4E2M1,
  Float8E8M0,
  UInt2,
  Int2,
  // Elements that are C++ objects, not bytes: never in an arena, never copied with memcpy.
  String,    // std::string (UTF-8)
  Sequence,  // a scalar handle to an immutable list of tensors (ONNX seq(T)), see container.h
  Optional,  // a scalar handle to zero or one tensor or sequence (ONNX optional(T))
};

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// Accepts the names dtype_name() prints ("float32", "int64", ...). Throws lumen::Error otherwise.
DType dtype_from_name(std::string_view name);
bool is_floating(DType dtype);
bool is_integral(DType dtype);
// The narrow types added for ONNX (float8, float4, int4, int2 families).
bool is_narrow(DType dtype);
// String, Sequence and Optional: elements are objects (see above).
bool holds_objects(DType dtype);
// Sequence and Optional.
bool is_container(DType dtype);

// Half-precision types are stored, not computed with, on the host: 16-bit payloads.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
// Narrow types: one byte per element holding the type's bit pattern in its low bits, upper bits
// zero (the layout of ml_dtypes' NumPy types; int4 -1 is 0x0F).
struct Float8E4M3FN {
  uint8_t bits;
};
struct Float8E4M3FNUZ {
  uint8_t bits;
};
struct Float8E5M2 {
  uint8_t bits;
};
struct Float8E5M2FNUZ {
  uint8_t bits;
};
struct Float8E8M0 {
  uint8_t bits;
};
struct Float4E2M1 {
  uint8_t bits;
};
struct Int4 {
  uint8_t bits;
};
struct UInt4 {
  uint8_t bits;
};
struct Int2 {
  uint8_t bits;
};
struct UInt2 {
  uint8_t bits;
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
struct DTypeOf<uint16_t> {
  static constexpr DType value = DType::UInt16;
};
template <>
struct DTypeOf<uint32_t> {
  static constexpr DType value = DType::UInt32;
};
template <>
struct DTypeOf<uint64_t> {
  static constexpr DType value = DType::UInt64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct DTypeOf<Float8E4M3FN> {
  static constexpr DType value = DType::Float8E4M3FN;
};
template <>
struct DTypeOf<Float8E4M3FNUZ> {
  static constexpr DType value = DType::Float8E4M3FNUZ;
};
template <>
struct DTypeOf<Float8E5M2> {
  static constexpr DType value = DType::Float8E5M2;
};
template <>
struct DTypeOf<Float8E5M2FNUZ> {
  static constexpr DType value = DType::Float8E5M2FNUZ;
};
template <>
struct DTypeOf<Float8E8M0> {
  static constexpr DType value = DType::Float8E8M0;
};
template <>
struct DTypeOf<Float4E2M1> {
  static constexpr DType value = DType::Float4E2M1;
};
template <>
struct DTypeOf<Int4> {
  static constexpr DType value = DType::Int4;
};
template <>
struct DTypeOf<UInt4> {
  static constexpr DType value = DType::UInt4;
};
template <>
struct DTypeOf<Int2> {
  static constexpr DType value = DType::Int2;
};
template <>
struct DTypeOf<UInt2> {
  static constexpr DType value = DType::UInt2;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::String;
};
template <class T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace lumen
