// ONNX import. Available when Lumen was built with LUMEN_WITH_ONNX (Protobuf + ONNX's schema).
#pragma once

#include <string>

#include "lumen/graph.h"

namespace lumen {

// Loads an ONNX model file into a Graph. External data files are resolved relative to the model's
// folder and must stay inside it (no absolute paths, no "..", no symlinks leading out).
// Every unsupported op is reported at once in one lumen::Error (op type, domain, opset, node).
Graph load_onnx(const std::string &path);

// The same from serialized ModelProto bytes. External data is resolved relative to `base_dir`;
// with an empty base_dir a model that uses external data is an error.
Graph load_onnx_from_bytes(const std::string &bytes, const std::string &base_dir = "");

}  // namespace lumen
