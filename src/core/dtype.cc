#include "lumen/dtype.h"

#include <array>

#include "lumen/error.h"

namespace lumen {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
  bool floating;
};

constexpr std::array<DTypeInfo, 26> kDTypes{{
    {DType::Float32, "float32", 4, true},
    {DType::Float16, "float16", 2, true},
    {DType::BFloat16, "bfloat16", 2, true},
    {DType::Float64, "float64", 8, true},
    {DType::Int8, "int8", 1, false},
    {DType::Int16, "int16", 2, false},
    {DType::Int32, "int32", 4, false},
    {DType::Int64, "int64", 8, false},
    {DType::UInt8, "uint8", 1, false},
    {DType::Bool, "bool", 1, false},
    {DType::UInt16, "uint16", 2, false},
    {DType::UInt32, "uint32", 4, false},
    {DType::UInt64, "uint64", 8, false},
    {DType::Float8E4M3FN, "float8_e4m3fn", 1, true},
    {DType::Float8E4M3FNUZ, "float8_e4m3fnuz", 1, true},
    {DType::Float8E5M2, "float8_e5m2", 1, true},
    {DType::Float8E5M2FNUZ, "float8_e5m2fnuz", 1, true},
    {DType::UInt4, "uint4", 1, false},
    {DType::Int4, "int4", 1, false},
    {DType::Float4E2M1, "float4_e2m1fn", 1, true},
    {DType::Float8E8M0, "float8_e8m0fnu", 1, true},
    {DType::UInt2, "uint2", 1, false},
    {DType::Int2, "int2", 1, false},
    {DType::String, "string", sizeof(std::string), false},
    // A container's one element is its handle (a Container behind the buffer), never copied.
    {DType::Sequence, "sequence", 0, false},
    {DType::Optional, "optional", 0, false},
}};

const DTypeInfo &info(DType dtype) {
  auto index = static_cast<size_t>(dtype);
  if (index >= kDTypes.size()) fail("invalid dtype value ", index);
  return kDTypes[index];
}

}  // namespace

size_t dtype_size(DType dtype) {
  return info(dtype).size;
}
std::string_view dtype_name(DType dtype) {
  return info(dtype).name;
}
bool is_floating(DType dtype) {
  return info(dtype).floating;
}
bool is_integral(DType dtype) {
  return !is_floating(dtype) && dtype != DType::Bool && !holds_objects(dtype);
}
bool holds_objects(DType dtype) {
  return dtype == DType::String || is_container(dtype);
}
bool is_container(DType dtype) {
  return dtype == DType::Sequence || dtype == DType::Optional;
}

bool is_narrow(DType dtype) {
  return static_cast<size_t>(dtype) >= static_cast<size_t>(DType::Float8E4M3FN) &&
         static_cast<size_t>(dtype) <= static_cast<size_t>(DType::Int2);
}

DType dtype_from_name(std::string_view name) {
  for (const auto &entry : kDTypes)
    if (entry.name == name) return entry.dtype;
  fail(
      "unknown dtype '", name,
      "' (expected one of float32, float16, bfloat16, float64, int8, int16, int32, int64, uint8, "
      "uint16, uint32, uint64, bool, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, "
      "uint4, int4, float4_e2m1fn, float8_e8m0fnu, uint2, int2, string)");
}

}  // namespace lumen
