// String ops and ai.onnx.ml's LabelEncoder (src/graph/ops/strings.cc). List attributes become
// tensor attributes (stopwords, the encoder's keys and values).
#include "onnx/converters/util.h"
#include "onnx/tensor_proto.h"

namespace lumen::onnx_import {
namespace {

const onnx::AttributeProto *find_attribute(const NodeContext &ctx, const std::string &name) {
  for (const auto &a : ctx.node().attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

Tensor strings_tensor(const google::protobuf::RepeatedPtrField<std::string> &values) {
  Tensor t = Tensor::empty(Shape{static_cast<int64_t>(values.size())}, DType::String);
  std::copy(values.begin(), values.end(), t.data<std::string>());
  return t;
}

// Both outputs named as in the model (the pieces and their counts).
std::vector<Value *> convert_string_split(NodeContext &ctx) {
  std::vector<std::string> names(2);
  for (int k = 0; k < ctx.node().output_size() && k < 2; ++k) names[k] = ctx.node().output(k);
  Node *node =
      ctx.graph().add_node("string_split", {ctx.input(0)}, ctx.attrs(), ctx.node().name(), names);
  return node->outputs();
}

std::vector<Value *> convert_string_normalizer(NodeContext &ctx) {
  Attributes attrs = ctx.attrs();
  attrs.erase("locale");  // case changes are ASCII-only, whatever the locale
  attrs.erase("stopwords");
  if (const auto *stops = find_attribute(ctx, "stopwords"))
    attrs.set("stopwords", strings_tensor(stops->strings()));
  return {ctx.emit("string_normalizer", {ctx.input(0)}, attrs)};
}

// LabelEncoder's keys_*/values_*/default_* attributes (one kind each) as three tensors.
std::vector<Value *> convert_label_encoder(NodeContext &ctx) {
  auto tensor_attribute = [&](const std::string &prefix) -> Tensor {
    if (const auto *a = find_attribute(ctx, prefix + "_tensor"))
      return tensor_from_proto(a->t(), ".", "attribute '" + prefix + "_tensor'");
    if (const auto *a = find_attribute(ctx, prefix + "_strings"))
      return strings_tensor(a->strings());
    if (const auto *a = find_attribute(ctx, prefix + "_int64s"))
      return Tensor::from_vector<int64_t>(Shape{a->ints_size()},
                                          {a->ints().begin(), a->ints().end()});
    if (const auto *a = find_attribute(ctx, prefix + "_floats"))
      return Tensor::from_vector<float>(Shape{a->floats_size()},
                                        {a->floats().begin(), a->floats().end()});
    ctx.fail("needs one of the attributes ", prefix, "_tensor, ", prefix, "_strings, ", prefix,
             "_int64s, ", prefix, "_floats");
  };
  const Tensor keys = tensor_attribute("keys");
  const Tensor values = tensor_attribute("values");
  Tensor fallback;
  if (const auto *a = find_attribute(ctx, "default_tensor")) {
    fallback = tensor_from_proto(a->t(), ".", "attribute 'default_tensor'").reshape(Shape{});
  } else if (values.dtype() == DType::String) {
    fallback = Tensor::empty(Shape{}, DType::String);
    fallback.data<std::string>()[0] = ctx.attrs().get_string("default_string", "_Unused");
  } else if (values.dtype() == DType::Int64) {
    fallback = Tensor::from_vector<int64_t>(Shape{}, {ctx.attrs().get_int("default_int64", -1)});
  } else {
    fallback = Tensor::from_vector<float>(
        Shape{}, {static_cast<float>(ctx.attrs().get_float("default_float", -0.0))});
  }
  return {ctx.emit("label_encoder", {ctx.input(0)},
                   {{"keys", keys.reshape(Shape{keys.numel()})},
                    {"values", values.reshape(Shape{values.numel()})},
                    {"default", fallback}})};
}

LUMEN_REGISTER_ONNX_CONVERTER("StringConcat", 20, same_op("string_concat"));
LUMEN_REGISTER_ONNX_CONVERTER("StringSplit", 20, convert_string_split);
LUMEN_REGISTER_ONNX_CONVERTER("StringNormalizer", 10, convert_string_normalizer);
LUMEN_REGISTER_ONNX_CONVERTER("RegexFullMatch", 20, same_op("regex_full_match"));
[[maybe_unused]] const bool label_encoder_registered = [] {
  register_converter({"ai.onnx.ml", "LabelEncoder", 2, convert_label_encoder});
  return true;
}();

}  // namespace
}  // namespace lumen::onnx_import
