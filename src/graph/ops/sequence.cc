// Sequence and optional ops (ONNX seq(T) and optional(T)), run by the executor itself. A
// container value is a scalar of dtype Sequence or Optional whose items' type is its `element`
// (see lumen/container.h); items' shapes are known only at run time.
//   sequence_construct(x...)               seq of the inputs (one tensor type)
//   sequence_empty()                       attr element ("float32"; "sequence,int64" nests)
//   sequence_insert(seq, x, position?)     a new seq with x inserted (default: at the end)
//   sequence_at(seq, position)             the item (negative positions count from the end)
//   sequence_erase(seq, position?)         a new seq without the item (default: the last)
//   sequence_length(seq)                   int64 scalar
//   split_to_sequence(x, split?)           attrs axis, keepdims (ONNX SplitToSequence)
//   concat_from_sequence(seq)              attrs axis, new_axis (ONNX ConcatFromSequence)
//   sequence_map(seq, more...)             attr body: item(s) -> outputs; one seq per output
//   optional(x?)                           attr element when x is absent (an empty optional)
//   optional_has_element(x?)               bool scalar: an optional holding an item, or any
//                                          tensor or sequence; false for a missing input
//   optional_get_element(x)                the item of an optional (a tensor or sequence passes)
#include "graph/op_schema.h"
#include "lumen/container.h"
#include "lumen/graph.h"

namespace lumen {
namespace {

constexpr int kMaxItems = 1 << 16;

// The type of a value as a container item: {dtype} for a tensor, kind then element otherwise.
std::vector<DType> item_of(const TensorType &t) {
  return item_type(t.dtype, t.element);
}

std::string item_name(const std::vector<DType> &type) {
  return type_name(type[0], {type.begin() + 1, type.end()});
}

// A value whose type is the item type `type`: a tensor of unknown shape, or a container.
TensorType value_of(const std::vector<DType> &type) {
  return {type[0], Shape{}, {type.begin() + 1, type.end()}};
}

const TensorType &sequence_input(const InferContext &ctx, size_t i) {
  const TensorType &t = ctx.input(i);
  if (t.dtype != DType::Sequence)
    ctx.fail("input ", i, " must be a sequence, got ", type_name(t.dtype, t.element));
  return t;
}

void check_position(const InferContext &ctx, size_t i) {
  if (!ctx.has_input(i)) return;
  const TensorType &p = ctx.input(i);
  if ((p.dtype != DType::Int64 && p.dtype != DType::Int32) || p.shape.numel() != 1)
    ctx.fail("position must be one int32 or int64, got ", dtype_name(p.dtype), " ",
             p.shape.to_string());
}

// Output i is an item: a tensor waits for run time for its shape; a container is a scalar.
std::vector<TensorType> item_output(const InferContext &ctx, const std::vector<DType> &type) {
  if (!is_container(type[0])) ctx.defer(std::vector<TensorType>{value_of(type)});
  return {value_of(type)};
}

std::vector<DType> element_attr(const InferContext &ctx) {
  if (!ctx.attrs.has("element")) ctx.fail("attribute 'element' (the items' type) is required");
  return element_from_text(ctx.attrs.get_string("element", ""));
}

std::vector<TensorType> infer_construct(const InferContext &ctx) {
  const std::vector<DType> type = item_of(ctx.input(0));
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (item_of(ctx.input(i)) != type)
      ctx.fail("input ", i, " is ", item_name(item_of(ctx.input(i))), ", input 0 ",
               item_name(type));
  return {{DType::Sequence, Shape{}, type}};
}

std::vector<TensorType> infer_empty(const InferContext &ctx) {
  return {{DType::Sequence, Shape{}, element_attr(ctx)}};
}

std::vector<TensorType> infer_insert(const InferContext &ctx) {
  const TensorType &seq = sequence_input(ctx, 0);
  if (item_of(ctx.input(1)) != seq.element)
    ctx.fail("inserting ", item_name(item_of(ctx.input(1))), " into a ",
             type_name(seq.dtype, seq.element));
  check_position(ctx, 2);
  return {seq};
}

std::vector<TensorType> infer_at(const InferContext &ctx) {
  const TensorType &seq = sequence_input(ctx, 0);
  check_position(ctx, 1);
  return item_output(ctx, seq.element);
}

std::vector<TensorType> infer_erase(const InferContext &ctx) {
  check_position(ctx, 1);
  return {sequence_input(ctx, 0)};
}

std::vector<TensorType> infer_length(const InferContext &ctx) {
  sequence_input(ctx, 0);
  return {{DType::Int64, Shape{}}};
}

std::vector<TensorType> infer_split(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (is_container(x.dtype)) ctx.fail("input 0 must be a tensor");
  if (ctx.has_input(1) && !is_integral(ctx.input(1).dtype))
    ctx.fail("split must be int32 or int64, got ", dtype_name(ctx.input(1).dtype));
  x.shape.normalize_axis(ctx.attrs.get_int("axis", 0), "axis");
  return {{DType::Sequence, Shape{}, {x.dtype}}};
}

std::vector<TensorType> infer_concat(const InferContext &ctx) {
  const TensorType &seq = sequence_input(ctx, 0);
  if (seq.element.size() != 1) ctx.fail("items must be tensors, got ", item_name(seq.element));
  return item_output(ctx, seq.element);
}

// The body takes one item of each sequence input and each other input as it is; every output
// becomes a sequence of the body's outputs.
std::vector<TensorType> infer_map(const InferContext &ctx) {
  const Graph *body = ctx.attrs.get_graph("body");
  if (!body) ctx.fail("attribute 'body' (a graph) is required");
  sequence_input(ctx, 0);
  if (body->inputs().size() != ctx.num_inputs())
    ctx.fail("the body takes ", body->inputs().size(), " inputs, the node has ", ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType &t = ctx.input(i);
    const std::vector<DType> given = t.dtype == DType::Sequence ? t.element : item_of(t);
    const Value *formal = body->inputs()[i];
    const std::vector<DType> want = item_of({formal->dtype(), Shape{}, formal->element_type()});
    if (given != want)
      ctx.fail("body input '", formal->name(), "' is ", item_name(want), ", given ",
               item_name(given));
  }
  std::vector<TensorType> out;
  for (const Value *v : body->outputs())
    out.push_back({DType::Sequence, Shape{}, item_of({v->dtype(), Shape{}, v->element_type()})});
  return out;
}

std::vector<TensorType> infer_optional(const InferContext &ctx) {
  if (ctx.has_input(0)) return {{DType::Optional, Shape{}, item_of(ctx.input(0))}};
  return {{DType::Optional, Shape{}, element_attr(ctx)}};
}

std::vector<TensorType> infer_has_element(const InferContext &) {
  return {{DType::Bool, Shape{}}};
}

std::vector<TensorType> infer_get_element(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (x.dtype != DType::Optional) return {x};
  return item_output(ctx, x.element);
}

#define LUMEN_CONTAINER_OP(op_name, min, max, outputs, fn) \
  LUMEN_REGISTER_OP({.name = op_name,                      \
                     .min_inputs = min,                    \
                     .max_inputs = max,                    \
                     .num_outputs = outputs,               \
                     .infer = fn,                          \
                     .takes_containers = true})

LUMEN_CONTAINER_OP("sequence_construct", 1, kMaxItems, 1, infer_construct);
LUMEN_CONTAINER_OP("sequence_empty", 0, 0, 1, infer_empty);
LUMEN_CONTAINER_OP("sequence_insert", 2, 3, 1, infer_insert);
LUMEN_CONTAINER_OP("sequence_at", 2, 2, 1, infer_at);
LUMEN_CONTAINER_OP("sequence_erase", 1, 2, 1, infer_erase);
LUMEN_CONTAINER_OP("sequence_length", 1, 1, 1, infer_length);
LUMEN_CONTAINER_OP("split_to_sequence", 1, 2, 1, infer_split);
LUMEN_CONTAINER_OP("concat_from_sequence", 1, 1, 1, infer_concat);
LUMEN_CONTAINER_OP("sequence_map", 1, kMaxItems, kVariadicOutputs, infer_map);
LUMEN_CONTAINER_OP("optional", 0, 1, 1, infer_optional);
LUMEN_CONTAINER_OP("optional_has_element", 0, 1, 1, infer_has_element);
LUMEN_CONTAINER_OP("optional_get_element", 1, 1, 1, infer_get_element);

}  // namespace
}  // namespace lumen
