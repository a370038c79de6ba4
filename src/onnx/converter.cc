#include "onnx/converter.h"

#include <map>
#include <mutex>

namespace lumen::onnx_import {
namespace {

struct Registry {
  std::mutex mutex;
  // (domain, op_type) -> entries sorted by min_opset
  std::map<std::pair<std::string, std::string>, std::vector<ConverterEntry>, std::less<>> entries;
};

Registry &registry() {
  static auto *r = new Registry;
  return *r;
}

}  // namespace

void register_converter(ConverterEntry entry) {
  auto &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto &list = r.entries[{entry.domain, entry.op_type}];
  list.push_back(std::move(entry));
  std::sort(list.begin(), list.end(),
            [](const auto &a, const auto &b) { return a.min_opset < b.min_opset; });
}

const ConverterEntry *find_converter(std::string_view domain, std::string_view op_type, int opset) {
  if (domain == "lumen") return opset >= 1 ? find_lumen_domain_converter(op_type) : nullptr;
  auto &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(std::make_pair(std::string(domain), std::string(op_type)));
  if (it == r.entries.end()) return nullptr;
  const ConverterEntry *best = nullptr;
  for (const auto &entry : it->second)
    if (entry.min_opset <= opset) best = &entry;
  return best;
}

NodeContext::NodeContext(Graph &graph, const onnx::NodeProto &node, int opset,
                         std::vector<Value *> inputs, Attributes attrs,
                         const SubgraphImporter *subgraphs)
    : graph_(graph),
      node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      attrs_(std::move(attrs)),
      subgraphs_(subgraphs) {}

const onnx::GraphProto &NodeContext::graph_attribute(const std::string &name) const {
  for (const auto &a : node_.attribute())
    if (a.name() == name && a.type() == onnx::AttributeProto::GRAPH) return a.g();
  fail("attribute '", name, "' (a graph) is required");
}

const SubgraphImporter &NodeContext::subgraphs() const {
  if (!subgraphs_) fail("subgraphs cannot be imported here");
  return *subgraphs_;
}

Value *NodeContext::input(size_t i) const {
  if (!has_input(i)) fail("input ", i, " is required but missing");
  return inputs_[i];
}

const Tensor *NodeContext::constant_input(size_t i) const {
  return has_input(i) && inputs_[i]->is_constant() ? &inputs_[i]->constant() : nullptr;
}

std::vector<int64_t> NodeContext::constant_ints(size_t i, const char *what) const {
  const Tensor *t = constant_input(i);
  if (!t)
    fail(what, " (input ", i,
         ") must be a constant; shapes computed at run time are not supported yet");
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  if (t->dtype() == DType::Int64) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data<int64_t>()[k];
  } else if (t->dtype() == DType::Int32) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data<int32_t>()[k];
  } else {
    fail(what, " (input ", i, ") must be int64 or int32, got ", dtype_name(t->dtype()));
  }
  return out;
}

Value *NodeContext::add(const std::string &op, const std::vector<Value *> &inputs,
                        const Attributes &attrs) {
  const std::string base =
      node_.output_size() && !node_.output(0).empty() ? node_.output(0) : node_.name();
  return graph_.add_op(op, inputs, attrs, base + "/" + op + std::to_string(intermediates_++));
}

Value *NodeContext::emit(const std::string &op, const std::vector<Value *> &inputs,
                         const Attributes &attrs, size_t index) {
  if (index >= num_outputs() || node_.output(static_cast<int>(index)).empty())
    return add(op, inputs, attrs);
  return graph_.add_op(op, inputs, attrs, node_.output(static_cast<int>(index)));
}

Value *NodeContext::constant(Tensor value, int output_index) {
  if (output_index >= 0 && output_index < node_.output_size() &&
      !node_.output(output_index).empty())
    return graph_.add_constant(node_.output(output_index), std::move(value));
  return graph_.add_constant(node_.name() + "/const" + std::to_string(intermediates_++),
                             std::move(value));
}

}  // namespace lumen::onnx_import
