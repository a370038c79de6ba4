// Element-wise math ONNX ops (trigonometry, rounding, activations with attributes, Mod, PRelu,
// Mean).
#include "onnx/converters/util.h"

namespace lumen::onnx_import {
namespace {

LUMEN_REGISTER_ONNX_CONVERTER("Sin", 7, same_op("sin"));
LUMEN_REGISTER_ONNX_CONVERTER("Cos", 7, same_op("cos"));
LUMEN_REGISTER_ONNX_CONVERTER("Tan", 7, same_op("tan"));
LUMEN_REGISTER_ONNX_CONVERTER("Asin", 7, same_op("asin"));
LUMEN_REGISTER_ONNX_CONVERTER("Acos", 7, same_op("acos"));
LUMEN_REGISTER_ONNX_CONVERTER("Atan", 7, same_op("atan"));
LUMEN_REGISTER_ONNX_CONVERTER("Sinh", 9, same_op("sinh"));
LUMEN_REGISTER_ONNX_CONVERTER("Cosh", 9, same_op("cosh"));
LUMEN_REGISTER_ONNX_CONVERTER("Asinh", 9, same_op("asinh"));
LUMEN_REGISTER_ONNX_CONVERTER("Acosh", 9, same_op("acosh"));
LUMEN_REGISTER_ONNX_CONVERTER("Atanh", 9, same_op("atanh"));
LUMEN_REGISTER_ONNX_CONVERTER("Erf", 9, same_op("erf"));
LUMEN_REGISTER_ONNX_CONVERTER("Reciprocal", 6, same_op("reciprocal"));
LUMEN_REGISTER_ONNX_CONVERTER("Floor", 6, same_op("floor"));
LUMEN_REGISTER_ONNX_CONVERTER("Ceil", 6, same_op("ceil"));
LUMEN_REGISTER_ONNX_CONVERTER("Round", 11, same_op("round"));
LUMEN_REGISTER_ONNX_CONVERTER("Softsign", 1, same_op("softsign"));
LUMEN_REGISTER_ONNX_CONVERTER("Mish", 18, same_op("mish"));
LUMEN_REGISTER_ONNX_CONVERTER("Selu", 6, same_op("selu"));
LUMEN_REGISTER_ONNX_CONVERTER("Celu", 12, same_op("celu"));
LUMEN_REGISTER_ONNX_CONVERTER("ThresholdedRelu", 10, same_op("thresholded_relu"));
LUMEN_REGISTER_ONNX_CONVERTER("Sign", 9, same_op("sign"));
LUMEN_REGISTER_ONNX_CONVERTER("Shrink", 9, same_op("shrink"));
LUMEN_REGISTER_ONNX_CONVERTER("Mod", 10, same_op("mod"));
LUMEN_REGISTER_ONNX_CONVERTER("PRelu", 7, same_op("prelu"));
LUMEN_REGISTER_ONNX_CONVERTER("Mean", 8, same_op("mean"));

}  // namespace
}  // namespace lumen::onnx_import
