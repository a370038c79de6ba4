#include "lumen/graph.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "graph/op_schema.h"
#include "lumen/container.h"

namespace lumen {

Graph::Graph() = default;
Graph::~Graph() = default;
Graph::Graph(Graph &&) noexcept = default;
Graph &Graph::operator=(Graph &&) noexcept = default;

Value *Graph::new_value(const std::string &name) {
  if (find_value(name)) fail("a value named '", name, "' already exists in the graph");
  values_.push_back(std::make_unique<Value>());
  values_.back()->name_ = name;
  values_by_name_[name] = values_.back().get();
  return values_.back().get();
}

bool Graph::owns(const Value *value) const {
  return value && find_value(value->name_) == value;
}

std::string Graph::unique_name(const std::string &base) {
  for (;;) {
    std::string name = base + "_" + std::to_string(next_id_++);
    if (!find_value(name)) return name;
  }
}

Value *Graph::find_value(const std::string &name) const {
  auto it = values_by_name_.find(name);
  return it == values_by_name_.end() ? nullptr : it->second;
}

Value *Graph::add_input(const std::string &name, const Shape &shape, DType dtype) {
  for (int64_t d : shape)
    if (d < kUnknownDim)
      fail("input '", name, "': invalid dimension ", d, " in ", shape.to_string());
  Value *v = new_value(name);
  v->dtype_ = dtype;
  v->shape_ = shape;
  v->has_shape_ = true;
  v->is_input_ = true;
  inputs_.push_back(v);
  return v;
}

Value *Graph::add_input_of_unknown_shape(const std::string &name, DType dtype) {
  Value *v = new_value(name);
  v->dtype_ = dtype;
  v->is_input_ = true;
  inputs_.push_back(v);
  return v;
}

Value *Graph::add_container_input(const std::string &name, DType kind, std::vector<DType> element) {
  if (!is_container(kind)) fail("input '", name, "': a container input is a Sequence or Optional");
  if (element.empty() || is_container(element.back()))
    fail("input '", name, "': the element type must end in a tensor dtype");
  Value *v = add_input(name, Shape{}, kind);
  v->element_ = std::move(element);
  return v;
}

Value *Graph::add_weight(const std::string &name, const Shape &shape, DType dtype) {
  if (dtype != DType::Float32)
    fail("add_weight '", name, "': only float32 weights can be generated");
  return add_constant(name, Tensor::randn(shape, std::hash<std::string>{}(name)));
}

Value *Graph::add_constant(const std::string &name, Tensor value) {
  if (!value.defined()) fail("add_constant '", name, "': the tensor is undefined");
  Value *v = new_value(name);
  v->dtype_ = value.dtype();
  v->shape_ = value.shape();
  v->has_shape_ = true;
  v->constant_ = value.contiguous();
  return v;
}

Node *Graph::add_node(const std::string &op, const std::vector<Value *> &inputs,
                      const Attributes &attrs, const std::string &name,
                      const std::vector<std::string> &output_names) {
  const OpSchema &schema = get_op(op);
  const std::string node_name = name.empty() ? unique_name(op) : name;
  for (Value *in : inputs) {
    if (in && !owns(in))
      fail("op '", op, "' (node '", node_name, "'): an input value does not belong to this graph");
  }
  auto node = std::make_unique<Node>();
  node->op_ = op;
  node->name_ = node_name;
  node->inputs_ = inputs;
  node->attrs_ = attrs;
  Node *n = node.get();
  // Output names: as given, else the node's name for a single output, "name:i" for several.
  const int num_outputs = schema.num_outputs == kVariadicOutputs
                              ? static_cast<int>(output_names.size())
                              : schema.num_outputs;
  if (num_outputs == 0) fail("op '", op, "' (node '", node_name, "'): give its output names");
  if (output_names.size() > static_cast<size_t>(num_outputs))
    fail("op '", op, "' (node '", node_name, "'): ", output_names.size(),
         " output names for an op with ", num_outputs, " outputs");
  std::vector<std::string> out_names;
  for (int i = 0; i < num_outputs; ++i) {
    const auto given = static_cast<size_t>(i) < output_names.size() ? output_names[i] : "";
    out_names.push_back(!given.empty()     ? given
                        : num_outputs == 1 ? node_name
                                           : node_name + ":" + std::to_string(i));
  }
  for (const auto &out_name : out_names)
    if (find_value(out_name))
      fail("op '", op, "': a value named '", out_name, "' already exists in the graph");
  infer_node(n);  // throws before the graph is modified
  nodes_.push_back(std::move(node));
  for (Value *in : inputs)
    if (in) in->users_.push_back(n);
  std::vector<Value *> outs;
  for (const auto &out_name : out_names) outs.push_back(new_value(out_name));
  n->outputs_ = outs;
  infer_node(n);
  for (Value *out : outs) out->producer_ = n;
  return n;
}

Value *Graph::add_op(const std::string &op, const std::vector<Value *> &inputs,
                     const Attributes &attrs, const std::string &name) {
  Node *n = add_node(op, inputs, attrs, name);
  if (n->outputs_.size() != 1)
    fail("op '", op, "' has ", n->outputs_.size(), " outputs; use add_node for multi-output ops");
  return n->outputs_[0];
}

namespace {

// A shape with its unknown dims set to 1, for dtype-only inference.
Shape placeholder(const Shape &shape) {
  std::vector<int64_t> dims = shape.dims();
  for (int64_t &d : dims)
    if (d == kUnknownDim) d = 1;
  return Shape(std::move(dims));
}

// Inference for a node whose inputs are given as values: types, shapes and constant values.
// Returns nullopt when shapes must wait for run time (unknown input dims or values); `deferred`
// then gets the output dtypes (and container element types).
std::optional<std::vector<TensorType>> infer_node_types(const Node *node, size_t num_outputs,
                                                        std::vector<TensorType> *deferred) {
  const OpSchema &schema = get_op(node->op());
  std::vector<TensorType> types(node->inputs().size());
  InferContext ctx{.attrs = node->attrs(), .op = node->op(), .node = node->name()};
  bool all_known = true;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    const Value *in = node->inputs()[i];
    ctx.inputs.push_back(in ? &types[i] : nullptr);
    ctx.values.push_back(in && in->is_constant() ? &in->constant() : nullptr);
    if (!in) continue;
    types[i] = {in->dtype(), in->shape(), in->element_type()};
    all_known = all_known && in->has_shape() && in->shape().is_static();
  }
  check_arity(schema, ctx);
  if (all_known) {
    try {
      return infer_types(schema, ctx);
    } catch (const DeferredInference &d) {
      *deferred = d.types;
      return std::nullopt;
    }
  }
  // Shapes resolve at run time, but the output dtypes are needed now (a comparison's bool, an
  // argmax's int64). Inference runs with placeholder shapes for the inputs whose shapes are not
  // known: rank 0, then all-ones shapes of rank 1 to 6 (which broadcast with anything and satisfy
  // most ops' rank checks); where none is accepted, the dtype of input 0 is carried forward.
  ctx.shapes_known = false;
  for (size_t rank = 0; rank <= 6; ++rank) {
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const Value *in = node->inputs()[i];
      if (in && (!in->has_shape() || !in->shape().is_static()))
        types[i].shape = in->has_shape() && in->shape().rank() > 0
                             ? placeholder(in->shape())
                             : Shape(std::vector<int64_t>(rank, 1));
    }
    try {
      *deferred = infer_types(schema, ctx);
      return std::nullopt;
    } catch (const DeferredInference &d) {
      *deferred = d.types;
      return std::nullopt;
    } catch (const Error &) {
      deferred->clear();
    }
  }
  const DType dtype = ctx.inputs.empty() || !ctx.inputs[0] ? DType::Float32 : ctx.inputs[0]->dtype;
  deferred->assign(num_outputs, TensorType{dtype, Shape{}});
  return std::nullopt;
}

}  // namespace

void Graph::infer_node(Node *node) {
  std::vector<TensorType> deferred;
  auto types = infer_node_types(node, node->outputs_.size(), &deferred);
  if (types && !node->outputs_.empty() && types->size() != node->outputs_.size())
    fail("op '", node->op_, "' (node '", node->name_, "'): inference gives ", types->size(),
         " outputs, the node has ", node->outputs_.size());
  for (size_t i = 0; i < node->outputs_.size(); ++i) {
    Value *out = node->outputs_[i];
    const TensorType t = types ? (*types)[i] : i < deferred.size() ? deferred[i] : TensorType{};
    out->dtype_ = t.dtype;
    out->element_ = t.element;
    // A container is a scalar handle: its shape is known even when its items' are not.
    out->has_shape_ = types.has_value() || is_container(t.dtype);
    out->shape_ = types ? t.shape : Shape{};
    out->symbolic_.reset();  // stale after a rewrite; infer_symbolic_shapes recomputes it
  }
}

void Graph::mark_output(Value *value) {
  if (!value) fail("mark_output: null value");
  if (!owns(value)) fail("mark_output: value '", value->name_, "' does not belong to this graph");
  outputs_.push_back(value);
}

void Graph::set_dim_names(Value *value, std::vector<std::string> names) {
  if (!owns(value)) fail("set_dim_names: the value does not belong to this graph");
  value->dim_names_ = std::move(names);
}

void Graph::set_input_shape(Value *input, const Shape &shape) {
  if (!owns(input) || !input->is_input_)
    fail("set_input_shape: the value is not an input of this graph");
  const Shape &old = input->shape_;
  bool compatible = !input->has_shape_ || old.rank() == shape.rank();  // no shape: any rank
  for (size_t i = 0; i < shape.rank(); ++i)
    compatible = compatible && shape[i] >= kUnknownDim &&
                 (!input->has_shape_ || old[i] == kUnknownDim || old[i] == shape[i]);
  if (!compatible)
    fail("input '", input->name_, "': shape ", shape.to_string(), " does not fit the declared ",
         old.to_string());
  if (input->has_shape_ && shape == old) return;
  input->shape_ = shape;
  input->has_shape_ = true;
  infer_types();
  infer_symbolic_shapes();
}

std::vector<Node *> Graph::nodes() const {
  std::vector<Node *> out;
  for (const auto &n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Node *> Graph::topological_order() const {
  // Kahn's algorithm over producer edges, stable with respect to insertion order.
  std::unordered_map<const Node *, int> pending;
  std::unordered_map<const Node *, std::vector<Node *>> consumers;
  for (const auto &n : nodes_) {
    int count = 0;
    for (const Value *in : n->inputs_)
      if (in && in->producer_) {
        ++count;
        consumers[in->producer_].push_back(n.get());
      }
    pending[n.get()] = count;
  }
  std::vector<Node *> order;
  std::vector<Node *> ready;
  for (const auto &n : nodes_)
    if (pending[n.get()] == 0) ready.push_back(n.get());
  std::reverse(ready.begin(), ready.end());
  while (!ready.empty()) {
    Node *n = ready.back();
    ready.pop_back();
    order.push_back(n);
    std::vector<Node *> unlocked;
    for (Node *c : consumers[n])
      if (--pending[c] == 0) unlocked.push_back(c);
    ready.insert(ready.end(), unlocked.rbegin(), unlocked.rend());
  }
  if (order.size() != nodes_.size()) {
    for (const auto &n : nodes_)
      if (pending[n.get()] > 0)
        fail("graph has a cycle through node '", n->name_, "' (op '", n->op_, "')");
  }
  return order;
}

void Graph::verify() const {
  std::unordered_set<const Value *> owned;
  std::unordered_set<std::string> names;
  for (const auto &v : values_) {
    owned.insert(v.get());
    if (!names.insert(v->name_).second) fail("verify: value name '", v->name_, "' is not unique");
  }
  for (const auto &n : nodes_) {
    const OpSchema *schema = find_op(n->op_);
    if (!schema) fail("verify: node '", n->name_, "' has unknown op '", n->op_, "'");
    const auto arity = static_cast<int>(n->inputs_.size());
    if (arity < schema->min_inputs || arity > schema->max_inputs)
      fail("verify: node '", n->name_, "' (op '", n->op_, "') has ", arity, " inputs, expected ",
           schema->min_inputs, " to ", schema->max_inputs);
    for (size_t i = 0; i < n->inputs_.size(); ++i) {
      const Value *in = n->inputs_[i];
      if (!in) {
        if (static_cast<int>(i) < schema->min_inputs)
          fail("verify: node '", n->name_, "' (op '", n->op_, "') is missing required input ", i);
        continue;
      }
      if (!owned.count(in))
        fail("verify: node '", n->name_, "' uses a value that is not in the graph");
      if (!in->producer_ && !in->is_input_ && !in->is_constant())
        fail("verify: node '", n->name_, "' (op '", n->op_, "') uses undefined value '", in->name_,
             "'");
    }
    for (const Value *out : n->outputs_)
      if (out->producer_ != n.get())
        fail("verify: output '", out->name_, "' of node '", n->name_, "' has a wrong producer");
  }
  for (const Value *out : outputs_)
    if (!owned.count(out)) fail("verify: a graph output is not in the graph");
  topological_order();  // throws on cycles
  // Stored types must agree with what inference gives now.
  for (const auto &n : nodes_) {
    std::vector<TensorType> deferred;
    const auto inferred = infer_node_types(n.get(), n->outputs_.size(), &deferred);
    if (!inferred) continue;
    for (size_t i = 0; i < inferred->size(); ++i) {
      const Value *out = n->outputs_[i];
      const TensorType &t = (*inferred)[i];
      if (out->has_shape_ &&
          (t.dtype != out->dtype_ || t.shape != out->shape_ || t.element != out->element_))
        fail("verify: node '", n->name_, "' (op '", n->op_, "') output '", out->name_, "' is ",
             type_name(out->dtype_, out->element_), " ", out->shape_.to_string(),
             " but inference gives ", type_name(t.dtype, t.element), " ", t.shape.to_string());
    }
  }
}

namespace {
std::string describe(const Value *v) {
  if (!v) return "<none>";
  std::string s = "%" + v->name() + ":" + type_name(v->dtype(), v->element_type());
  s += v->has_shape()        ? v->shape().to_string()
       : v->symbolic_shape() ? v->symbolic_shape()->to_string()
                             : "[?]";
  return s;
}
}  // namespace

std::string Graph::to_string() const {
  std::ostringstream out;
  out << "graph(";
  for (size_t i = 0; i < inputs_.size(); ++i) out << (i ? ", " : "") << describe(inputs_[i]);
  out << ") {\n";
  for (const auto &v : values_)
    if (v->is_constant()) out << "  " << describe(v.get()) << " = constant\n";
  for (const Node *n : topological_order()) {
    out << "  ";
    for (size_t i = 0; i < n->outputs_.size(); ++i)
      out << (i ? ", " : "") << describe(n->outputs_[i]);
    out << " = " << n->op_ << "(";
    for (size_t i = 0; i < n->inputs_.size(); ++i)
      out << (i ? ", " : "") << (n->inputs_[i] ? "%" + n->inputs_[i]->name() : "<none>");
    out << ")";
    if (!n->attrs_.empty()) out << " " << n->attrs_.to_string();
    out << "\n";
  }
  out << "  return ";
  for (size_t i = 0; i < outputs_.size(); ++i) out << (i ? ", " : "") << "%" << outputs_[i]->name();
  out << "\n}\n";
  return out.str();
}

void Graph::set_input(Node *node, size_t index, Value *value) {
  if (index >= node->inputs_.size())
    fail("set_input: node '", node->name_, "' has no input ", index);
  Value *old = node->inputs_[index];
  if (old) {
    auto it = std::find(old->users_.begin(), old->users_.end(), node);
    if (it != old->users_.end()) old->users_.erase(it);
  }
  node->inputs_[index] = value;
  if (value) value->users_.push_back(node);
}

bool Graph::can_replace(const Value *from, const Value *to) const {
  const bool from_is_output = std::count(outputs_.begin(), outputs_.end(), from) != 0;
  if (!from_is_output) return true;
  return to->producer_ && std::count(outputs_.begin(), outputs_.end(), to) == 0;
}

void Graph::replace_all_uses(Value *from, Value *to) {
  if (from == to) return;
  if (!can_replace(from, to))
    fail("replace_all_uses: graph output '", from->name_, "' cannot become '", to->name_,
         "' (an input, a constant or another output) without losing its name");
  const std::vector<Node *> users = from->users_;
  for (Node *user : users)
    for (size_t i = 0; i < user->inputs_.size(); ++i)
      if (user->inputs_[i] == from) set_input(user, i, to);
  if (std::count(outputs_.begin(), outputs_.end(), from) != 0) {
    // The output keeps its name: the two values swap names.
    values_by_name_.erase(from->name_);
    values_by_name_.erase(to->name_);
    std::swap(from->name_, to->name_);
    values_by_name_[from->name_] = from;
    values_by_name_[to->name_] = to;
    to->dim_names_ = from->dim_names_;
  }
  std::replace(outputs_.begin(), outputs_.end(), from, to);
}

size_t Graph::remove_unused_constants() {
  size_t removed = 0;
  for (auto it = values_.begin(); it != values_.end();) {
    Value *v = it->get();
    if (v->is_constant() && v->users_.empty() &&
        std::count(outputs_.begin(), outputs_.end(), v) == 0) {
      values_by_name_.erase(v->name_);
      it = values_.erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

void Graph::remove_node(Node *node) {
  for (const Value *out : node->outputs_) {
    if (!out->users_.empty() || std::count(outputs_.begin(), outputs_.end(), out))
      fail("remove_node: output '", out->name_, "' of node '", node->name_, "' is still used");
  }
  for (size_t i = 0; i < node->inputs_.size(); ++i) set_input(node, i, nullptr);
  const std::vector<Value *> outs = node->outputs_;
  for (const Value *out : outs) values_by_name_.erase(out->name_);
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [&](const auto &v) {
                                 return std::count(outs.begin(), outs.end(), v.get()) != 0;
                               }),
                values_.end());
  nodes_.erase(
      std::find_if(nodes_.begin(), nodes_.end(), [&](const auto &n) { return n.get() == node; }));
}

namespace {

// A node's attributes for another node: subgraphs are copied, not shared.
Attributes deep_copy(const Attributes &attrs) {
  Attributes copy = attrs;
  for (const auto &[name, value] : attrs.items())
    if (const auto *sub = std::get_if<std::shared_ptr<Graph>>(&value))
      copy.set(name, std::make_shared<Graph>((*sub)->clone()));
  return copy;
}

}  // namespace

std::vector<Value *> Graph::inline_graph(const Graph &sub, const std::vector<Value *> &inputs,
                                         const std::string &prefix) {
  if (inputs.size() != sub.inputs_.size())
    fail("inline_graph: ", inputs.size(), " inputs for a graph with ", sub.inputs_.size());
  std::unordered_map<const Value *, Value *> map;
  for (size_t i = 0; i < inputs.size(); ++i) map[sub.inputs_[i]] = inputs[i];
  auto mapped = [&](const Value *v) -> Value * {
    if (!v) return nullptr;
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    Value *c = add_constant(unique_name(prefix + v->name_), v->constant_);  // a constant of sub
    map[v] = c;
    return c;
  };
  for (const Node *n : sub.topological_order()) {
    std::vector<Value *> ins;
    for (const Value *in : n->inputs_) ins.push_back(mapped(in));
    std::vector<std::string> names;
    for (const Value *out : n->outputs_) names.push_back(unique_name(prefix + out->name_));
    Node *copy = add_node(n->op_, ins, deep_copy(n->attrs_), unique_name(prefix + n->name_), names);
    for (size_t i = 0; i < n->outputs_.size(); ++i) map[n->outputs_[i]] = copy->outputs_[i];
  }
  std::vector<Value *> outs;
  for (const Value *out : sub.outputs_) outs.push_back(mapped(out));
  return outs;
}

void Graph::infer_types() {
  for (Node *n : topological_order()) infer_node(n);
}

Graph Graph::clone() const {
  Graph copy;
  std::unordered_map<const Value *, Value *> map;
  for (const auto &v : values_) {
    if (v->producer_) continue;
    auto nv = std::make_unique<Value>(*v);
    nv->users_.clear();
    map[v.get()] = nv.get();
    copy.values_by_name_[nv->name_] = nv.get();
    copy.values_.push_back(std::move(nv));
  }
  for (const Value *in : inputs_) copy.inputs_.push_back(map.at(in));
  for (const Node *n : topological_order()) {
    auto nn = std::make_unique<Node>();
    nn->op_ = n->op_;
    nn->name_ = n->name_;
    nn->attrs_ = deep_copy(n->attrs_);
    for (const Value *in : n->inputs_) {
      Value *mapped = in ? map.at(in) : nullptr;
      nn->inputs_.push_back(mapped);
      if (mapped) mapped->users_.push_back(nn.get());
    }
    for (const Value *out : n->outputs_) {
      auto nv = std::make_unique<Value>(*out);
      nv->users_.clear();
      nv->producer_ = nn.get();
      map[out] = nv.get();
      nn->outputs_.push_back(nv.get());
      copy.values_by_name_[nv->name_] = nv.get();
      copy.values_.push_back(std::move(nv));
    }
    copy.nodes_.push_back(std::move(nn));
  }
  for (const Value *out : outputs_) copy.outputs_.push_back(map.at(out));
  copy.next_id_ = next_id_;
  return copy;
}

}  // namespace lumen
