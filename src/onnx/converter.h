// ONNX op converters: one function per ONNX op (and domain), registered from the file of its op
// family with LUMEN_REGISTER_ONNX_CONVERTER. A converter maps one ONNX node to Lumen values:
// usually one Lumen op, sometimes a few, sometimes none (Identity, Dropout, Constant).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lumen/graph.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx_import {

// The type a subgraph's formal input gets: a dtype, and a shape (dims may be unknown) or none
// when even the rank is unknown.
struct SubgraphInputType {
  DType dtype;
  std::optional<Shape> shape;
  std::vector<DType> element = {};  // Sequence and Optional: the items' type
};

// The Lumen type of an ONNX TypeProto: a tensor's dtype and shape, or a sequence's or optional's
// kind and items' type (maps and sparse tensors: an error naming `what`).
SubgraphInputType type_from_proto(const onnx::TypeProto &type, const std::string &what);

// What converters of control-flow ops need from the importer, in the scope of the node being
// converted.
class SubgraphImporter {
 public:
  virtual ~SubgraphImporter() = default;
  // Names that `body` (or a graph nested in it) reads without defining: values of enclosing
  // graphs, in first-use order.
  virtual std::vector<std::string> free_names(const onnx::GraphProto &body) const = 0;
  // The value `name` has where the node is; throws naming it when undefined.
  virtual Value *lookup(const std::string &name) const = 0;
  // `body` as a Graph whose inputs are its own formal inputs, typed by `formal` (one per input
  // of `body`), then one input per name of `captures`, typed like the value it has here.
  virtual std::shared_ptr<Graph> import(const onnx::GraphProto &body,
                                        const std::vector<SubgraphInputType> &formal,
                                        const std::vector<std::string> &captures) const = 0;
};

class NodeContext {
 public:
  NodeContext(Graph &graph, const onnx::NodeProto &node, int opset, std::vector<Value *> inputs,
              Attributes attrs, const SubgraphImporter *subgraphs = nullptr);

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
  // The graph attribute `name` of this node; throws when it has none.
  const onnx::GraphProto &graph_attribute(const std::string &name) const;
  const SubgraphImporter &subgraphs() const;

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
  const SubgraphImporter *subgraphs_;
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
