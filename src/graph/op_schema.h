// The op table: one OpSchema per op name, holding its arity and its type/shape inference. Ops
// register themselves from their own file (src/graph/ops/<family>.cc) with LUMEN_REGISTER_OP, so
// adding an op never means editing a central switch.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lumen/attributes.h"
#include "lumen/error.h"

namespace lumen {

// The floating types ops that compute in floating point accept: float16 and bfloat16 as well as
// float32 and float64 (the compiler runs half-precision nodes in float32 where only a slower
// backend has their kernel: graph/passes/widen_half_precision.h).
inline bool computes_in_float(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
         dtype == DType::BFloat16;
}

struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;
  // Sequence and Optional: the items' type (see Container::element); empty for tensors.
  std::vector<DType> element = {};
  bool operator==(const TensorType &) const = default;
};

// Thrown by inference when an output's shape depends on input values not known yet (a shape
// computed at run time): the graph then leaves the output shapes to run time.
struct DeferredInference {
  std::vector<TensorType> types;  // one per output: dtypes (and container element types) only
};

// What an inference function sees. Omitted optional inputs are nullptr.
struct InferContext {
  std::vector<const TensorType *> inputs;
  const Attributes &attrs;
  std::string_view op;
  std::string_view node;
  // Input values where known: constants when building a graph, every input at run time.
  std::vector<const Tensor *> values = {};
  // False when the graph asks only for output dtypes: some input shapes are placeholders (their
  // real shapes are known at run time), so shapes must not be trusted, nor given to subgraphs.
  bool shapes_known = true;

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const TensorType &input(size_t i) const;
  // The value of input i, or nullptr when it is only known at run time.
  const Tensor *value(size_t i) const { return i < values.size() ? values[i] : nullptr; }
  // Input i's values as int64 (int32/int64 tensors); nullopt when not known yet.
  std::optional<std::vector<int64_t>> int_values(size_t i) const;
  // For ops whose output shapes depend on input values that are not known yet.
  [[noreturn]] void defer(const std::vector<DType> &output_dtypes) const {
    std::vector<TensorType> types;
    for (DType d : output_dtypes) types.push_back({d, Shape{}});
    throw DeferredInference{std::move(types)};
  }
  // The same where outputs may be containers (their element types are kept); shapes ignored.
  [[noreturn]] void defer(std::vector<TensorType> output_types) const {
    throw DeferredInference{std::move(output_types)};
  }
  // Throws lumen::Error prefixed with "op 'OP' (node 'NODE'): ".
  template <class... Args>
  [[noreturn]] void fail(const Args &...args) const {
    ::lumen::fail("op '", op, "' (node '", node, "'): ", args...);
  }
};

using InferFn = std::vector<TensorType> (*)(const InferContext &);

inline constexpr int kVariadicOutputs = -1;

struct OpSchema {
  std::string name;
  int min_inputs = 1;
  int max_inputs = 1;
  int num_outputs = 1;  // kVariadicOutputs: as many as the node is given names for
  InferFn infer = nullptr;
  // Output i may be written into the memory of input 0 (element-wise ops), for the planner.
  bool elementwise = false;
  // Output 0 is input 0's bytes under another shape (reshape, flatten, squeeze, unsqueeze): a
  // planned executable makes it a view of the input's memory and skips the kernel.
  bool view = false;
  // Inputs may be sequences or optionals (control flow, sequence and optional ops); other ops
  // reject them with an error naming the input.
  bool takes_containers = false;
  // Output sizes depend on input values and cost as much to find as the op itself (non max
  // suppression): where inference could not size the outputs at compile time, a run infers
  // without the values (checks only) and the kernel gets undefined outputs, which it allocates.
  bool kernel_sizes_outputs = false;
  // Outputs after the first are extras (attention's present keys and scores): one that nothing
  // reads (no user, not a graph output) is not computed; its kernel gets nullptr for it.
  bool optional_outputs = false;
};

void register_op(OpSchema schema);
const OpSchema *find_op(std::string_view name);  // nullptr when unknown
const OpSchema &get_op(std::string_view name);   // throws "unknown op 'x'" with the known ones
std::vector<std::string> registered_ops();

// Checks the number of inputs and that required ones are present.
void check_arity(const OpSchema &schema, const InferContext &ctx);
// Checks arity and container inputs, and runs inference; every error names the op and node.
std::vector<TensorType> infer_types(const OpSchema &schema, const InferContext &ctx);

// Shape helpers shared by inference functions.
// NumPy broadcasting of two shapes; nullopt when incompatible. Unknown dims (kUnknownDim) stay
// unknown against 1 or another unknown dim and take the other side's size otherwise.
std::optional<Shape> broadcast_shapes(const Shape &a, const Shape &b);
// The dims shape(x) returns for `shape` and the op's start/end attributes (clamped as ONNX says).
std::vector<int64_t> shape_op_dims(const Shape &shape, const Attributes &attrs);
// What a shape or size node returns for an input of static `shape`; nullopt for other ops.
std::optional<Tensor> shape_query_value(std::string_view op, const Shape &shape,
                                        const Attributes &attrs);
// "[2, -1, 0]": ints as written (Shape::to_string would print -1 as "?").
std::string ints_to_string(const std::vector<int64_t> &v);
// a * b, or an error naming the node when the element count overflows int64.
int64_t mul_or_fail(const InferContext &ctx, int64_t a, int64_t b);
// a * b for dims that may be unknown: 0 when either is 0, else unknown when either is (an
// unknown dim is kUnknownDim, -1: multiplied in, it gave sizes like -3), else mul_or_fail.
int64_t mul_dims(const InferContext &ctx, int64_t a, int64_t b);
// Ints attribute `name` (default `fallback`), which must have fallback.size() values, each
// >= min_value; errors name the attribute and the node.
std::vector<int64_t> ints_attr(const InferContext &ctx, const char *name,
                               const std::vector<int64_t> &fallback, int64_t min_value);

}  // namespace lumen

#define LUMEN_CONCAT_INNER(a, b) a##b
#define LUMEN_CONCAT(a, b) LUMEN_CONCAT_INNER(a, b)
// LUMEN_REGISTER_OP({.name = "relu", .infer = same_as_input, .elementwise = true});
#define LUMEN_REGISTER_OP(...)                                          \
  static const bool LUMEN_CONCAT(lumen_op_registered_, __LINE__) = [] { \
    ::lumen::register_op(::lumen::OpSchema __VA_ARGS__);                \
    return true;                                                        \
  }()
