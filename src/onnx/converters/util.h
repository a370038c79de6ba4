// Helpers shared by converters.
#pragma once

#include "onnx/converter.h"

namespace lumen::onnx_import {

// A converter that maps an ONNX op 1:1 onto the Lumen op `op`, passing the attributes through.
Converter same_op(const std::string &op);

// Static shape of a value or a clear error naming the node.
const Shape &static_shape(NodeContext &ctx, Value *v, const char *what);

// Explicit [begin..., end...] pads for spatial dims from ONNX's auto_pad, pads, strides, dilations.
std::vector<int64_t> resolve_pads(NodeContext &ctx, const Shape &input,
                                  const std::vector<int64_t> &kernel,
                                  const std::vector<int64_t> &strides,
                                  const std::vector<int64_t> &dilations);

// Emits `op`, or runs it at once when every input is a small constant (shape arithmetic such as
// Concat(Shape(x), [-1])), so that its values, and the shapes computed from them, are known at
// load time instead of at run time.
Value *emit_folded(NodeContext &ctx, const std::string &op, const std::vector<Value *> &inputs,
                   const Attributes &attrs = {}, size_t index = 0);

}  // namespace lumen::onnx_import
