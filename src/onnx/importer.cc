// ModelProto -> Graph. Checks the model's structure (opsets, names, types, sizes) and reports every
// unsupported op in one error before converting anything.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sstream>

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "lumen/container.h"
#include "lumen/onnx.h"
#include "onnx/converter.h"
#include "onnx/tensor_proto.h"

namespace lumen {
namespace {
namespace fs = std::filesystem;
using namespace onnx_import;

Attributes convert_attributes(const onnx::NodeProto &node, const fs::path &base_dir) {
  Attributes attrs;
  for (const auto &a : node.attribute()) {
    const std::string what = "attribute '" + a.name() + "' of node '" + node.name() + "'";
    switch (a.type()) {
      case onnx::AttributeProto::FLOAT:
        attrs.set(a.name(), static_cast<double>(a.f()));
        break;
      case onnx::AttributeProto::INT:
        attrs.set(a.name(), static_cast<int64_t>(a.i()));
        break;
      case onnx::AttributeProto::STRING:
        attrs.set(a.name(), a.s());
        break;
      case onnx::AttributeProto::FLOATS:
        attrs.set(a.name(), std::vector<double>(a.floats().begin(), a.floats().end()));
        break;
      case onnx::AttributeProto::INTS:
        attrs.set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
        break;
      case onnx::AttributeProto::STRINGS:
        attrs.set(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
        break;
      case onnx::AttributeProto::TENSOR:
        attrs.set(a.name(), tensor_from_proto(a.t(), base_dir, what));
        break;
      default:
        // Subgraphs, sparse tensors and type protos: converters that need them read the proto.
        break;
    }
  }
  return attrs;
}

// The dim_param names of a declared type ("" for dims without one); empty when none is named.
std::vector<std::string> dim_names_from_type(const onnx::TypeProto &type) {
  std::vector<std::string> names;
  bool any = false;
  for (const auto &d : type.tensor_type().shape().dim()) {
    names.push_back(d.has_dim_param() ? d.dim_param() : "");
    any = any || d.has_dim_param();
  }
  return any ? names : std::vector<std::string>{};
}

Shape shape_from_type(const onnx::TypeProto &type) {
  std::vector<int64_t> dims;
  for (const auto &d : type.tensor_type().shape().dim()) {
    // Exporters write an unknown dim as a dim_param, no value at all, or a value of -1 (or 0).
    dims.push_back(d.has_dim_value() && d.dim_value() > 0 ? d.dim_value() : kUnknownDim);
  }
  return Shape(std::move(dims));
}

// The items' type of a sequence's or optional's element type, outermost first.
std::vector<DType> item_type_from_proto(const onnx::TypeProto &type, const std::string &what) {
  const SubgraphInputType t = type_from_proto(type, what);
  return item_type(t.dtype, t.element);
}

}  // namespace

SubgraphInputType onnx_import::type_from_proto(const onnx::TypeProto &type,
                                               const std::string &what) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      // No shape at all (not even a rank): known only at run time.
      return {dtype_from_onnx(type.tensor_type().elem_type(), what),
              type.tensor_type().has_shape() ? std::optional<Shape>(shape_from_type(type))
                                             : std::nullopt};
    case onnx::TypeProto::kSequenceType:
      return {DType::Sequence, Shape{},
              item_type_from_proto(type.sequence_type().elem_type(), what)};
    case onnx::TypeProto::kOptionalType:
      return {DType::Optional, Shape{},
              item_type_from_proto(type.optional_type().elem_type(), what)};
    default:
      fail(what,
           ": only tensor, sequence and optional types are supported (not maps or sparse "
           "tensors)");
  }
}

namespace {

std::string display_name(const onnx::NodeProto &node, int index, const std::string &prefix) {
  if (!node.name().empty()) return node.name();
  return prefix + node.op_type() + "#" + std::to_string(index);
}

std::string domain_of(const onnx::NodeProto &node) {
  return node.domain() == "ai.onnx" ? "" : node.domain();
}

// Subgraphs (If, Loop and Scan bodies) nested deeper than this are refused: importing, compiling
// and running recurse once per level. Real models nest a few levels (and protobuf's own parsers
// stop at about 30: 100 messages deep).
constexpr int kMaxSubgraphDepth = 16;

// Every unsupported op of `g` and the graphs nested in it, by op: node names. Fails on subgraphs
// nested deeper than kMaxSubgraphDepth (`depth`: g's).
void find_unsupported(const onnx::GraphProto &g, const std::map<std::string, int> &opsets,
                      const std::string &prefix,
                      std::map<std::string, std::vector<std::string>> &unsupported, int depth = 0) {
  if (depth > kMaxSubgraphDepth)
    fail("ONNX model nests subgraphs more than ", kMaxSubgraphDepth, " deep (at '", prefix, "')");
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &node = g.node(i);
    const std::string name = display_name(node, i, prefix);
    const std::string domain = domain_of(node);
    auto opset = opsets.find(domain);
    if (opset == opsets.end())
      unsupported[node.op_type() + " (domain '" + domain + "' not imported by the model)"]
          .push_back(name);
    else if (!find_converter(domain, node.op_type(), opset->second))
      unsupported[node.op_type() + " (domain '" + domain + "', opset " +
                  std::to_string(opset->second) + ")"]
          .push_back(name);
    for (const auto &a : node.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH)
        find_unsupported(a.g(), opsets, name + "/", unsupported, depth + 1);
      for (const auto &sub : a.graphs())
        find_unsupported(sub, opsets, name + "/", unsupported, depth + 1);
    }
  }
}

void add_free_name(const std::string &name, const std::set<std::string> &defined,
                   std::vector<std::string> &names) {
  if (!name.empty() && !defined.count(name) &&
      std::find(names.begin(), names.end(), name) == names.end())
    names.push_back(name);
}

// The names `g` reads without defining them, nested graphs included, in first-use order.
std::vector<std::string> free_names_of(const onnx::GraphProto &g) {
  std::set<std::string> defined;
  for (const auto &in : g.input()) defined.insert(in.name());
  for (const auto &init : g.initializer()) defined.insert(init.name());
  std::vector<std::string> names;
  for (const auto &node : g.node()) {
    for (const std::string &in : node.input()) add_free_name(in, defined, names);
    for (const auto &a : node.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH)
        for (const std::string &n : free_names_of(a.g())) add_free_name(n, defined, names);
      for (const auto &sub : a.graphs())
        for (const std::string &n : free_names_of(sub)) add_free_name(n, defined, names);
    }
    for (const std::string &out : node.output()) defined.insert(out);
  }
  for (const auto &out : g.output()) add_free_name(out.name(), defined, names);
  return names;
}

// Converts the nodes of one graph (the model's, or a subgraph) into a Lumen Graph. Names are
// resolved in this graph's scope only: a subgraph's reads of enclosing values arrive as inputs.
class GraphImporter final : public SubgraphImporter {
 public:
  GraphImporter(const std::map<std::string, int> &opsets, const fs::path &base_dir, Graph &graph,
                std::string prefix)
      : opsets_(opsets), base_dir_(base_dir), graph_(graph), prefix_(std::move(prefix)) {}

  void define(const std::string &name, Value *v, const char *kind) {
    if (name.empty()) return;
    if (!scope_.emplace(name, v).second) fail("ONNX model defines '", name, "' twice (", kind, ")");
  }
  bool defines(const std::string &name) const { return scope_.count(name) != 0; }

  // `release` (the model's own graph, which nothing reads again): each initializer's proto is
  // emptied once it is a tensor, so a model's weights are never held three times over (file
  // bytes, protobuf, tensors; 3x a 350 MB BERT at the peak).
  void add_initializers(const onnx::GraphProto &g, onnx::GraphProto *release = nullptr) {
    for (int i = 0; i < g.initializer_size(); ++i) {
      const onnx::TensorProto &init = g.initializer(i);
      const std::string what = "initializer '" + init.name() + "'";
      if (init.name().empty()) fail("ONNX model has an initializer without a name");
      const std::string name = init.name();
      Tensor value = tensor_from_proto(init, base_dir_, what);
      if (release) {  // frees the data, keeps the name
        onnx::TensorProto().Swap(release->mutable_initializer(i));
        release->mutable_initializer(i)->set_name(name);
      }
      define(name, graph_.add_constant(name, std::move(value)), "initializer");
    }
  }

  void convert_nodes(const onnx::GraphProto &g) {
    for (int i = 0; i < g.node_size(); ++i) {
      onnx::NodeProto node = g.node(i);
      node.set_name(display_name(node, i, prefix_));  // messages need a name
      convert(node);
    }
  }

  void mark_outputs(const onnx::GraphProto &g) {
    for (const auto &out : g.output()) {
      auto it = scope_.find(out.name());
      if (it == scope_.end()) fail("ONNX graph output '", out.name(), "' is never defined");
      graph_.mark_output(it->second);
      if (!it->second->is_input() && it->second->dim_names().empty())
        graph_.set_dim_names(it->second, dim_names_from_type(out.type()));
    }
  }

  // SubgraphImporter.
  std::vector<std::string> free_names(const onnx::GraphProto &body) const override {
    return free_names_of(body);
  }
  Value *lookup(const std::string &name) const override {
    auto it = scope_.find(name);
    if (it == scope_.end())
      fail("'", name, "' is read by a subgraph but not defined in an enclosing graph");
    return it->second;
  }
  std::shared_ptr<Graph> import(const onnx::GraphProto &body,
                                const std::vector<SubgraphInputType> &formal,
                                const std::vector<std::string> &captures) const override {
    if (static_cast<int>(formal.size()) != body.input_size())
      fail("the subgraph has ", body.input_size(), " inputs, expected ", formal.size());
    auto sub = std::make_shared<Graph>();
    GraphImporter inner(opsets_, base_dir_, *sub, current_node_ + "/");
    auto add_input = [&](const std::string &name, const SubgraphInputType &type) {
      Value *v = is_container(type.dtype) ? sub->add_container_input(name, type.dtype, type.element)
                 : type.shape             ? sub->add_input(name, *type.shape, type.dtype)
                                          : sub->add_input_of_unknown_shape(name, type.dtype);
      inner.define(name, v, "subgraph input");
    };
    for (int i = 0; i < body.input_size(); ++i) add_input(body.input(i).name(), formal[i]);
    for (const std::string &name : captures) {
      const Value *outer = lookup(name);
      add_input(name, {outer->dtype(),
                       outer->has_shape() ? std::optional<Shape>(outer->shape()) : std::nullopt,
                       outer->element_type()});
    }
    inner.add_initializers(body);
    inner.convert_nodes(body);
    inner.mark_outputs(body);
    return sub;
  }

 private:
  void convert(const onnx::NodeProto &node) {
    const std::string domain = domain_of(node);
    const int opset = opsets_.at(domain);
    std::vector<Value *> inputs;
    for (const std::string &name : node.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);  // omitted optional input
        continue;
      }
      auto it = scope_.find(name);
      if (it == scope_.end())
        fail("ONNX node '", node.name(), "' (op '", node.op_type(), "'): input '", name,
             "' is not defined by an initializer, a graph input or an earlier node");
      inputs.push_back(it->second);
    }
    std::vector<Value *> outputs;
    current_node_ = node.name();
    try {
      NodeContext ctx(graph_, node, opset, std::move(inputs), convert_attributes(node, base_dir_),
                      this);
      outputs = find_converter(domain, node.op_type(), opset)->convert(ctx);
    } catch (const Error &e) {
      // Errors from shared code (attributes, graph building) get the ONNX node named first.
      const std::string msg = e.what();
      if (msg.rfind("ONNX node", 0) == 0) throw;
      fail("ONNX node '", node.name(), "' (op '", node.op_type(), "', opset ", opset, "): ", msg);
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      if (k >= static_cast<int>(outputs.size()) || !outputs[k])
        fail("ONNX node '", node.name(), "' (op '", node.op_type(), "'): output ", k, " ('",
             node.output(k), "') is not produced by Lumen's converter");
      define(node.output(k), outputs[k], "node output");
    }
  }

  const std::map<std::string, int> &opsets_;
  const fs::path &base_dir_;
  Graph &graph_;
  std::string prefix_;  // for unnamed nodes of subgraphs: "parent/"
  std::map<std::string, Value *> scope_;
  std::string current_node_;
};

// Converts `model`, emptying its initializers as they become tensors.
Graph import_model(onnx::ModelProto &model, const fs::path &base_dir) {
  if (!model.has_graph()) fail("ONNX model has no graph");
  if (model.ir_version() < 3)
    fail("ONNX model IR version ", model.ir_version(), " is not supported (need >= 3)");
  std::map<std::string, int> opsets;
  for (const auto &o : model.opset_import()) {
    const std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
    if (o.version() <= 0)
      fail("ONNX model imports domain '", domain, "' at invalid opset ", o.version());
    opsets[domain] = static_cast<int>(o.version());
  }

  const onnx::GraphProto &g = model.graph();
  // Check ops, subgraphs included, before converting anything.
  std::map<std::string, std::vector<std::string>> unsupported;
  find_unsupported(g, opsets, "", unsupported);
  if (!unsupported.empty()) {
    std::ostringstream msg;
    msg << "ONNX model uses " << unsupported.size() << " unsupported op"
        << (unsupported.size() > 1 ? "s" : "") << ":";
    for (const auto &[op, names] : unsupported) {
      msg << "\n  " << op << ": node" << (names.size() > 1 ? "s " : " ");
      for (size_t k = 0; k < names.size() && k < 5; ++k)
        msg << (k ? ", '" : "'") << names[k] << "'";
      if (names.size() > 5) msg << " and " << names.size() - 5 << " more";
    }
    throw Error(msg.str());
  }

  Graph graph;
  GraphImporter importer(opsets, base_dir, graph, "");
  importer.add_initializers(g, model.mutable_graph());
  for (const auto &in : g.input()) {
    if (importer.defines(in.name())) continue;  // IR < 4 lists initializers as inputs too
    const SubgraphInputType type = type_from_proto(in.type(), "graph input '" + in.name() + "'");
    Value *v = is_container(type.dtype)
                   ? graph.add_container_input(in.name(), type.dtype, type.element)
               : type.shape ? graph.add_input(in.name(), *type.shape, type.dtype)
                            : graph.add_input_of_unknown_shape(in.name(), type.dtype);
    graph.set_dim_names(v, dim_names_from_type(in.type()));
    importer.define(in.name(), v, "input");
  }
  importer.convert_nodes(g);
  importer.mark_outputs(g);
  graph.verify();
  graph.infer_symbolic_shapes();
  return graph;
}

onnx::ModelProto parse_model(const std::string &bytes, const std::string &what) {
  onnx::ModelProto model;
  if (bytes.empty()) fail(what, " is empty, not an ONNX model");
  if (!model.ParseFromString(bytes))
    fail(what, " is not a valid ONNX model (protobuf parsing failed: truncated or corrupt?)");
  return model;
}

// The model in the file at `path`, parsed as it is read (no copy of the file's bytes).
onnx::ModelProto parse_model_file(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open ONNX model '", path, "'");
  struct stat st {};
  const bool empty = ::fstat(fd, &st) == 0 && st.st_size == 0;
  onnx::ModelProto model;
  bool parsed = false;
  {
    google::protobuf::io::FileInputStream stream(fd);
    stream.SetCloseOnDelete(true);
    parsed = !empty && model.ParseFromZeroCopyStream(&stream) && stream.GetErrno() == 0;
  }
  if (empty) fail("'", path, "' is empty, not an ONNX model");
  if (!parsed)
    fail("'", path, "' is not a valid ONNX model (protobuf parsing failed: truncated or corrupt?)");
  return model;
}

// Hands the heap freed by parsing back to the system: the protobuf's many weight-sized strings
// are below glibc's mmap threshold, so their memory would stay in the process after import.
Graph returning_freed_memory(Graph graph) {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  return graph;
}

}  // namespace

Graph load_onnx(const std::string &path) {
  fs::path dir = fs::path(path).parent_path();
  onnx::ModelProto model = parse_model_file(path);
  return returning_freed_memory(import_model(model, dir.empty() ? fs::path(".") : dir));
}

Graph load_onnx_from_bytes(const std::string &bytes, const std::string &base_dir) {
  onnx::ModelProto model = parse_model(bytes, "the given bytes");
  return returning_freed_memory(import_model(model, base_dir));
}

}  // namespace lumen
