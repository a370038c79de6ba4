// ONNX op converters: one function per ONNX op (and domain), registered from the file of its op
// family with LUMEN_REGISTER_ONNX_CONVERTER. A converter maps one ONNX node to Lumen values:
// usually one Lumen op, sometimes a few, sometimes none (Identity, Dropout, Constant).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lumen/graph.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx_import {

class NodeContext {
 public:
  NodeContext(Graph &graph, const onnx::NodeProto &node, int opset, std::vector<Value *> inputs,
              Attributes attrs);

  Graph &graph() { return graph_; }
  const onnx::NodeProto &node() const { return node_; }
  int opset() const { return opset_; }  // the model's opset for this node's domain
  const Attributes &attrs() const { return attrs_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  Value *input(size_t i) const;  // throws when missing
  // The value of input i when it is a constant (initializer or folded Constant), else nullptr.
  const Tensor *constant_input(size_t i) const;
  // The constant int64/int32 input i as a vector; throws if it is not constant.
  std::vector<int64_t> constant_ints(size_t i, const char *what) const;
  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }

  // Adds a Lumen op for an intermediate result (named after this node).
  Value *add(const std::string &op, const std::vector<Value *> &inputs,
             const Attributes &attrs = {});
  // Adds the Lumen op that produces ONNX output `index`, named like it.
  Value *emit(const std::string &op, const std::vector<Value *> &inputs,
              const Attributes &attrs = {}, size_t index = 0);
  // A constant produced by this node (ONNX output `index` when named, else an intermediate).
  Value *constant(Tensor value, int output_index = -1);

  // Throws "ONNX node 'NAME' (op 'TYPE', opset N): ..." .
  template <class... Args>
  [[noreturn]] void fail(const Args &...args) const {
    ::lumen::fail("ONNX node '", node_.name(), "' (op '", node_.op_type(), "', opset ", opset_,
                  "): ", args...);
  }

 private:
  Graph &graph_;
  const onnx::NodeProto &node_;
  int opset_;
  std::vector<Value *> inputs_;
  Attributes attrs_;
  int intermediates_ = 0;
};

// Returns one Value per ONNX output of the node (nullptr for outputs the model does not name).
using Converter = std::function<std::vector<Value *>(NodeContext &)>;

struct ConverterEntry {
  std::string domain;  // "" is the default ONNX domain
  std::string op_type;
  int min_opset;  // oldest opset this converter handles
  Converter convert;
};

void register_converter(ConverterEntry entry);
// The "lumen" domain (ops saved by save_optimized): any registered Lumen op, added unchanged.
const ConverterEntry *find_lumen_domain_converter(std::string_view op_type);
// The converter for op_type in domain at `opset`, or nullptr when unsupported.
const ConverterEntry *find_converter(std::string_view domain, std::string_view op_type, int opset);

}  // namespace lumen::onnx_import

#define LUMEN_ONNX_CONCAT_INNER(a, b) a##b
#define LUMEN_ONNX_CONCAT(a, b) LUMEN_ONNX_CONCAT_INNER(a, b)
// LUMEN_REGISTER_ONNX_CONVERTER("Relu", 6, convert_relu);  (default domain)
#define LUMEN_REGISTER_ONNX_CONVERTER(op_type, min_opset, fn)                 \
  static const bool LUMEN_ONNX_CONCAT(lumen_onnx_converter_, __LINE__) = [] { \
    ::lumen::onnx_import::register_converter({"", op_type, min_opset, fn});   \
    return true;                                                              \
  }()
