// Comparison, logical, bitwise and selection ONNX ops.
#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

LUMEN_REGISTER_ONNX_CONVERTER("Equal", 7, same_op("equal"));
LUMEN_REGISTER_ONNX_CONVERTER("Less", 7, same_op("less"));
LUMEN_REGISTER_ONNX_CONVERTER("Greater", 7, same_op("greater"));
LUMEN_REGISTER_ONNX_CONVERTER("LessOrEqual", 12, same_op("less_equal"));
LUMEN_REGISTER_ONNX_CONVERTER("GreaterOrEqual", 12, same_op("greater_equal"));
LUMEN_REGISTER_ONNX_CONVERTER("And", 7, same_op("logical_and"));
LUMEN_REGISTER_ONNX_CONVERTER("Or", 7, same_op("logical_or"));
LUMEN_REGISTER_ONNX_CONVERTER("Xor", 7, same_op("logical_xor"));
LUMEN_REGISTER_ONNX_CONVERTER("Not", 1, same_op("logical_not"));
LUMEN_REGISTER_ONNX_CONVERTER("BitShift", 11, same_op("bit_shift"));
LUMEN_REGISTER_ONNX_CONVERTER("BitwiseAnd", 18, same_op("bitwise_and"));
LUMEN_REGISTER_ONNX_CONVERTER("BitwiseOr", 18, same_op("bitwise_or"));
LUMEN_REGISTER_ONNX_CONVERTER("BitwiseXor", 18, same_op("bitwise_xor"));
LUMEN_REGISTER_ONNX_CONVERTER("BitwiseNot", 18, same_op("bitwise_not"));
LUMEN_REGISTER_ONNX_CONVERTER("IsNaN", 9, same_op("is_nan"));
LUMEN_REGISTER_ONNX_CONVERTER("IsInf", 10, same_op("is_inf"));
LUMEN_REGISTER_ONNX_CONVERTER("Where", 9, same_op("where"));

}  // namespace
}  // namespace lumen::onnx_import
