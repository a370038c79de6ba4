#include "onnx/tensor_proto.h"

#include <bit>
#include <cstring>
#include <fstream>
#include <vector>

#include "lumen/error.h"

namespace lumen::onnx_import {
namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; big-endian hosts need byte swapping");

DType dtype_from_onnx(int onnx_type, const std::string &what) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
      return DType::Float32;
    case onnx::TensorProto::UINT8:
      return DType::UInt8;
    case onnx::TensorProto::UINT16:
      return DType::UInt16;
    case onnx::TensorProto::UINT32:
      return DType::UInt32;
    case onnx::TensorProto::UINT64:
      return DType::UInt64;
    case onnx::TensorProto::INT8:
      return DType::Int8;
    case onnx::TensorProto::INT16:
      return DType::Int16;
    case onnx::TensorProto::INT32:
      return DType::Int32;
    case onnx::TensorProto::INT64:
      return DType::Int64;
    case onnx::TensorProto::BOOL:
      return DType::Bool;
    case onnx::TensorProto::FLOAT16:
      return DType::Float16;
    case onnx::TensorProto::DOUBLE:
      return DType::Float64;
    case onnx::TensorProto::BFLOAT16:
      return DType::BFloat16;
    case onnx::TensorProto::FLOAT8E4M3FN:
      return DType::Float8E4M3FN;
    case onnx::TensorProto::FLOAT8E4M3FNUZ:
      return DType::Float8E4M3FNUZ;
    case onnx::TensorProto::FLOAT8E5M2:
      return DType::Float8E5M2;
    case onnx::TensorProto::FLOAT8E5M2FNUZ:
      return DType::Float8E5M2FNUZ;
    case onnx::TensorProto::UINT4:
      return DType::UInt4;
    case onnx::TensorProto::INT4:
      return DType::Int4;
    case onnx::TensorProto::FLOAT4E2M1:
      return DType::Float4E2M1;
    case onnx::TensorProto::FLOAT8E8M0:
      return DType::Float8E8M0;
    case onnx::TensorProto::UINT2:
      return DType::UInt2;
    case onnx::TensorProto::INT2:
      return DType::Int2;
    case onnx::TensorProto::STRING:
      return DType::String;
    default:
      break;
  }
  const std::string name =
      onnx::TensorProto::DataType_IsValid(onnx_type)
          ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnx_type))
          : "invalid type " + std::to_string(onnx_type);
  fail(what, ": element type ", name, " is not supported");
}

namespace {

// Resolves an external data location inside base_dir, refusing anything that escapes it.
fs::path resolve_external_path(const std::string &location, const fs::path &base_dir,
                               const std::string &what) {
  if (base_dir.empty())
    fail(what, ": uses external data '", location,
         "', but the model was loaded from bytes without a base directory");
  const fs::path rel(location);
  if (location.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    fail(what, ": external data location '", location, "' must be a relative path");
  for (const auto &part : rel)
    if (part == "..") fail(what, ": external data location '", location, "' must not contain '..'");
  std::error_code ec;
  const fs::path root = fs::canonical(base_dir, ec);
  if (ec) fail(what, ": model folder '", base_dir.string(), "' cannot be resolved");
  const fs::path full = fs::canonical(root / rel, ec);
  if (ec) fail(what, ": external data file '", location, "' not found next to the model");
  // canonical() resolves symlinks: the real file must still be inside the model's folder.
  auto [root_end, full_it] = std::mismatch(root.begin(), root.end(), full.begin(), full.end());
  if (root_end != root.end())
    fail(what, ": external data '", location, "' resolves outside the model folder");
  if (!fs::is_regular_file(full)) fail(what, ": external data '", location, "' is not a file");
  return full;
}

void read_external(const onnx::TensorProto &proto, const fs::path &base_dir,
                   const std::string &what, void *dst, size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : proto.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception &) {
      fail(what, ": external data field '", entry.key(), "' is not a number: '", entry.value(),
           "'");
    }
  }
  const fs::path path = resolve_external_path(location, base_dir, what);
  if (offset < 0) fail(what, ": negative external data offset ", offset);
  if (length >= 0 && static_cast<uint64_t>(length) != nbytes)
    fail(what, ": external data length ", length, " does not match the tensor's ", nbytes,
         " bytes");
  const auto file_size = fs::file_size(path);
  if (static_cast<uint64_t>(offset) > file_size || file_size - offset < nbytes)
    fail(what, ": external data '", location, "' has ", file_size, " bytes, needs ", nbytes,
         " at offset ", offset);
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  in.read(static_cast<char *>(dst), static_cast<std::streamsize>(nbytes));
  if (!in) fail(what, ": reading external data '", location, "' failed");
}

template <class Field, class Store>
void copy_typed(const Field &field, int64_t numel, const std::string &what, const char *name,
                Store store) {
  if (field.size() != numel)
    fail(what, ": ", name, " holds ", field.size(), " values, expected ", numel);
  for (int64_t i = 0; i < numel; ++i) store(i, field.Get(static_cast<int>(i)));
}

// Bits per element of the types ONNX packs several to a byte (0: not packed).
int packed_bits(DType dtype) {
  switch (dtype) {
    case DType::UInt4:
    case DType::Int4:
    case DType::Float4E2M1:
      return 4;
    case DType::UInt2:
    case DType::Int2:
      return 2;
    default:
      return 0;
  }
}

// Unpacks ONNX's packed sub-byte storage (first element in the least significant bits) into one
// byte per element (the element's bits in the low bits, as Lumen stores these types).
void unpack_sub_byte(const uint8_t *src, DType dtype, int64_t numel, char *dst) {
  const int bits = packed_bits(dtype);
  const int per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1u;
  for (int64_t i = 0; i < numel; ++i) {
    const unsigned v = (src[i / per_byte] >> ((i % per_byte) * bits)) & mask;
    dst[i] = static_cast<char>(static_cast<uint8_t>(v));
  }
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto &proto, const fs::path &base_dir,
                         const std::string &what) {
  const DType dtype = dtype_from_onnx(proto.data_type(), what);
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims)
    if (d < 0) fail(what, ": negative dimension ", d, " in ", Shape(dims).to_string());
  const Shape shape(dims);
  const int64_t numel = shape.numel();  // checked
  if (dtype == DType::String) {         // string_data holds the elements (external data cannot)
    if (proto.string_data_size() != numel)
      fail(what, ": ", proto.string_data_size(), " strings for shape ", shape.to_string());
    Tensor t = Tensor::empty(shape, dtype);
    std::copy(proto.string_data().begin(), proto.string_data().end(), t.data<std::string>());
    return t;
  }
  // The data must be there before memory is taken for it: a few bytes of model must not make
  // Lumen allocate terabytes. (External data is checked against its file's size.)
  if (proto.data_location() != onnx::TensorProto::EXTERNAL) {
    const int64_t held = proto.has_raw_data()
                             ? static_cast<int64_t>(proto.raw_data().size())
                             : int64_t{proto.float_data_size()} + proto.double_data_size() +
                                   proto.int32_data_size() + proto.int64_data_size() +
                                   proto.uint64_data_size();
    if (numel > 4 * held)  // at most 4 elements per byte or stored value (2-bit types)
      fail(what, ": declares ", numel, " elements (", shape.to_string(), ") but holds data for ",
           held == 0 ? "none" : "fewer");
  }
  Tensor t = Tensor::empty(shape, dtype);
  const size_t nbytes = t.nbytes();
  char *dst = static_cast<char *>(t.raw_data());

  if (const int bits = packed_bits(dtype)) {
    const int per_byte = 8 / bits;
    const size_t packed = static_cast<size_t>((numel + per_byte - 1) / per_byte);
    std::vector<uint8_t> bytes(packed);
    if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
      read_external(proto, base_dir, what, bytes.data(), packed);
    } else if (proto.has_raw_data()) {
      if (proto.raw_data().size() != packed)
        fail(what, ": raw_data has ", proto.raw_data().size(), " bytes, expected ", packed, " (",
             dtype_name(dtype), " ", shape.to_string(), ", packed ", per_byte, " per byte)");
      std::memcpy(bytes.data(), proto.raw_data().data(), packed);
    } else {
      if (static_cast<size_t>(proto.int32_data().size()) != packed)
        fail(what, ": int32_data holds ", proto.int32_data().size(), " values, expected ", packed,
             " (", dtype_name(dtype), " ", shape.to_string(), ", packed ", per_byte, " per value)");
      for (size_t i = 0; i < packed; ++i)
        bytes[i] = static_cast<uint8_t>(proto.int32_data(static_cast<int>(i)) & 0xFF);
    }
    unpack_sub_byte(bytes.data(), dtype, numel, dst);
    return t;
  }

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    read_external(proto, base_dir, what, dst, nbytes);
    return t;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != nbytes)
      fail(what, ": raw_data has ", proto.raw_data().size(), " bytes, expected ", nbytes, " (",
           dtype_name(dtype), " ", shape.to_string(), ")");
    std::memcpy(dst, proto.raw_data().data(), nbytes);
    return t;
  }
  switch (dtype) {
    case DType::Float32:
      copy_typed(proto.float_data(), numel, what, "float_data",
                 [&](int64_t i, float v) { t.data<float>()[i] = v; });
      break;
    case DType::Float64:
      copy_typed(proto.double_data(), numel, what, "double_data",
                 [&](int64_t i, double v) { t.data<double>()[i] = v; });
      break;
    case DType::Int64:
      copy_typed(proto.int64_data(), numel, what, "int64_data",
                 [&](int64_t i, int64_t v) { t.data<int64_t>()[i] = v; });
      break;
    case DType::UInt32:
    case DType::UInt64:
      // ONNX stores uint32 and uint64 in uint64_data.
      copy_typed(proto.uint64_data(), numel, what, "uint64_data", [&](int64_t i, uint64_t v) {
        if (dtype == DType::UInt32)
          t.data<uint32_t>()[i] = static_cast<uint32_t>(v);
        else
          t.data<uint64_t>()[i] = v;
      });
      break;
    case DType::Int32:
      copy_typed(proto.int32_data(), numel, what, "int32_data",
                 [&](int64_t i, int32_t v) { t.data<int32_t>()[i] = v; });
      break;
    case DType::Int16:
    case DType::Int8:
    case DType::UInt8:
    case DType::UInt16:
    case DType::Bool:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
    case DType::Float8E8M0: {
      // Narrow types are stored widened in int32_data; keep the low bytes (little-endian).
      const size_t elem = dtype_size(dtype);
      copy_typed(proto.int32_data(), numel, what, "int32_data", [&](int64_t i, int32_t v) {
        if (dtype == DType::Bool) v = v != 0;
        std::memcpy(dst + static_cast<size_t>(i) * elem, &v, elem);
      });
      break;
    }
    default:
      fail(what, ": element type ", dtype_name(dtype), " cannot be decoded");  // packed: above
  }
  return t;
}

}  // namespace lumen::onnx_import
