// Sequence and optional ops: one Lumen op each (src/graph/ops/sequence.cc); SequenceMap's body
// becomes a Graph attribute with its captures as explicit inputs, like Loop's.
#include "lumen/container.h"
#include "onnx/converters/util.h"
#include "onnx/tensor_proto.h"

namespace lumen::onnx_import {
namespace {

// The `element` attribute from an ONNX elem type: SequenceEmpty's `dtype` (float by default).
std::vector<Value *> convert_sequence_empty(NodeContext &ctx) {
  const DType dtype =
      dtype_from_onnx(static_cast<int>(ctx.attrs().get_int("dtype", onnx::TensorProto::FLOAT)),
                      "attribute 'dtype'");
  return {ctx.emit("sequence_empty", {}, {{"element", element_to_text({dtype})}})};
}

// Optional's `type` attribute (a TypeProto) gives the items' type of an empty optional.
std::vector<Value *> convert_optional(NodeContext &ctx) {
  if (ctx.has_input(0)) return {ctx.emit("optional", {ctx.input(0)})};
  for (const auto &a : ctx.node().attribute())
    if (a.name() == "type") {
      const SubgraphInputType t = type_from_proto(a.tp(), "attribute 'type'");
      return {
          ctx.emit("optional", {}, {{"element", element_to_text(item_type(t.dtype, t.element))}})};
    }
  ctx.fail("an empty Optional needs attribute 'type'");
}

std::vector<Value *> convert_has_element(NodeContext &ctx) {
  return {ctx.emit("optional_has_element", {ctx.has_input(0) ? ctx.input(0) : nullptr})};
}

// The body takes one item of each sequence input and every tensor input whole.
std::vector<Value *> convert_sequence_map(NodeContext &ctx) {
  const SubgraphImporter &importer = ctx.subgraphs();
  const onnx::GraphProto &body_proto = ctx.graph_attribute("body");
  std::vector<SubgraphInputType> formal;
  std::vector<Value *> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    Value *v = ctx.input(i);
    inputs.push_back(v);
    if (v->dtype() == DType::Sequence) {
      const std::vector<DType> &item = v->element_type();
      formal.push_back({item[0], std::nullopt, {item.begin() + 1, item.end()}});
    } else {
      formal.push_back({v->dtype(),
                        v->has_shape() ? std::optional<Shape>(v->shape()) : std::nullopt,
                        v->element_type()});
    }
  }
  const std::vector<std::string> captures = importer.free_names(body_proto);
  for (const std::string &name : captures) inputs.push_back(importer.lookup(name));
  auto body = importer.import(body_proto, formal, captures);
  std::vector<std::string> names;
  for (size_t k = 0; k < ctx.num_outputs(); ++k)
    names.push_back(ctx.node().output(static_cast<int>(k)));
  if (names.size() != body->outputs().size())
    ctx.fail("has ", names.size(), " outputs, its body gives ", body->outputs().size());
  return ctx.graph()
      .add_node("sequence_map", inputs, {{"body", body}}, ctx.node().name(), names)
      ->outputs();
}

LUMEN_REGISTER_ONNX_CONVERTER("SequenceConstruct", 11, same_op("sequence_construct"));
LUMEN_REGISTER_ONNX_CONVERTER("SequenceEmpty", 11, convert_sequence_empty);
LUMEN_REGISTER_ONNX_CONVERTER("SequenceInsert", 11, same_op("sequence_insert"));
LUMEN_REGISTER_ONNX_CONVERTER("SequenceAt", 11, same_op("sequence_at"));
LUMEN_REGISTER_ONNX_CONVERTER("SequenceErase", 11, same_op("sequence_erase"));
LUMEN_REGISTER_ONNX_CONVERTER("SequenceLength", 11, same_op("sequence_length"));
LUMEN_REGISTER_ONNX_CONVERTER("SplitToSequence", 11, same_op("split_to_sequence"));
LUMEN_REGISTER_ONNX_CONVERTER("ConcatFromSequence", 11, same_op("concat_from_sequence"));
LUMEN_REGISTER_ONNX_CONVERTER("SequenceMap", 17, convert_sequence_map);
LUMEN_REGISTER_ONNX_CONVERTER("Optional", 15, convert_optional);
LUMEN_REGISTER_ONNX_CONVERTER("OptionalHasElement", 15, convert_has_element);
LUMEN_REGISTER_ONNX_CONVERTER("OptionalGetElement", 15, same_op("optional_get_element"));

}  // namespace
}  // namespace lumen::onnx_import
