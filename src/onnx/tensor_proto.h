// ONNX TensorProto -> Tensor, including external data, with every size checked.
#pragma once

#include <filesystem>
#include <string>

#include "lumen/tensor.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx_import {

// Maps an ONNX TensorProto.DataType to a DType; throws naming `what` for unsupported types.
DType dtype_from_onnx(int onnx_type, const std::string &what);

// Converts `proto` (named `what` in errors). `base_dir` is where external data may live; empty
// forbids external data.
Tensor tensor_from_proto(const onnx::TensorProto &proto, const std::filesystem::path &base_dir,
                         const std::string &what);

}  // namespace lumen::onnx_import
