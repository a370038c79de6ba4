// ModelProto -> Graph. Checks the model's structure (opsets, names, types, sizes) and reports every
// unsupported op in one error before converting anything.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

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

Shape shape_from_type(const onnx::TypeProto &type, const std::string &what) {
  std::vector<int64_t> dims;
  for (const auto &d : type.tensor_type().shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) fail(what, ": negative dimension ", d.dim_value());
      dims.push_back(d.dim_value());
    } else {
      dims.push_back(kUnknownDim);  // symbolic (dim_param) or unknown
    }
  }
  return Shape(std::move(dims));
}

std::string display_name(const onnx::NodeProto &node, int index) {
  if (!node.name().empty()) return node.name();
  return node.op_type() + "#" + std::to_string(index);
}

Graph import_model(const onnx::ModelProto &model, const fs::path &base_dir) {
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
  // Name every node (messages need it) and check ops before converting anything.
  std::vector<onnx::NodeProto> nodes(g.node().begin(), g.node().end());
  std::map<std::string, std::vector<std::string>> unsupported;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    onnx::NodeProto &node = nodes[i];
    node.set_name(display_name(node, i));
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto opset = opsets.find(domain);
    if (opset == opsets.end()) {
      unsupported[node.op_type() + " (domain '" + domain + "' not imported by the model)"]
          .push_back(node.name());
      continue;
    }
    if (!find_converter(domain, node.op_type(), opset->second))
      unsupported[node.op_type() + " (domain '" + domain + "', opset " +
                  std::to_string(opset->second) + ")"]
          .push_back(node.name());
  }
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
  std::map<std::string, Value *> scope;
  auto define = [&](const std::string &name, Value *v, const char *kind) {
    if (name.empty()) return;
    if (!scope.emplace(name, v).second) fail("ONNX model defines '", name, "' twice (", kind, ")");
  };
  for (const auto &init : g.initializer()) {
    const std::string what = "initializer '" + init.name() + "'";
    if (init.name().empty()) fail("ONNX model has an initializer without a name");
    define(init.name(), graph.add_constant(init.name(), tensor_from_proto(init, base_dir, what)),
           "initializer");
  }
  for (const auto &in : g.input()) {
    if (scope.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    const std::string what = "graph input '" + in.name() + "'";
    if (!in.type().has_tensor_type())
      fail(what,
           ": only tensor inputs are supported (sequence, map and optional inputs are not "
           "supported)");
    const DType dtype = dtype_from_onnx(in.type().tensor_type().elem_type(), what);
    Value *v = graph.add_input(in.name(), shape_from_type(in.type(), what), dtype);
    graph.set_dim_names(v, dim_names_from_type(in.type()));
    define(in.name(), v, "input");
  }

  for (const onnx::NodeProto &node : nodes) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    const int opset = opsets.at(domain);
    std::vector<Value *> inputs;
    for (const std::string &name : node.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);  // omitted optional input
        continue;
      }
      auto it = scope.find(name);
      if (it == scope.end())
        fail("ONNX node '", node.name(), "' (op '", node.op_type(), "'): input '", name,
             "' is not defined by an initializer, a graph input or an earlier node");
      inputs.push_back(it->second);
    }
    std::vector<Value *> outputs;
    try {
      NodeContext ctx(graph, node, opset, std::move(inputs), convert_attributes(node, base_dir));
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
  for (const auto &out : g.output()) {
    auto it = scope.find(out.name());
    if (it == scope.end()) fail("ONNX graph output '", out.name(), "' is never defined");
    graph.mark_output(it->second);
    if (!it->second->is_input() && it->second->dim_names().empty())
      graph.set_dim_names(it->second, dim_names_from_type(out.type()));
  }
  graph.verify();
  return graph;
}

onnx::ModelProto parse_model(const std::string &bytes, const std::string &what) {
  onnx::ModelProto model;
  if (bytes.empty()) fail(what, " is empty, not an ONNX model");
  if (!model.ParseFromString(bytes))
    fail(what, " is not a valid ONNX model (protobuf parsing failed: truncated or corrupt?)");
  return model;
}

}  // namespace

Graph load_onnx(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ONNX model '", path, "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const onnx::ModelProto model = parse_model(buffer.str(), "'" + path + "'");
  fs::path dir = fs::path(path).parent_path();
  return import_model(model, dir.empty() ? fs::path(".") : dir);
}

Graph load_onnx_from_bytes(const std::string &bytes, const std::string &base_dir) {
  return import_model(parse_model(bytes, "the given bytes"), base_dir);
}

}  // namespace lumen
