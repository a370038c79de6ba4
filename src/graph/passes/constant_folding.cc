// Evaluates nodes whose inputs are all constants once, at optimization time, and replaces their
// outputs with constants. Also folds shape/size of values whose shape is static, which turns
// shape arithmetic (shape -> gather -> unsqueeze -> concat -> reshape) into constants.
//
// Bounded: an output larger than max(64 KiB, the node's input bytes) or than 16 MiB stays a node,
// so folding never trades a cheap op (constant_of_shape, expand, tile...) for a big weight;
// except where the output feeds a kernel that prepares its constant inputs at compile time
// (weights packed for a GEMM or conv: the ONNX light models write every weight as a
// constant_of_shape, which left their convs on unpacked weights, made again on every run). Those
// outputs may reach 1 GiB, up to 1 GiB in all per run of the pass: as much as running the node
// would need anyway, and checked before anything is allocated.
#include <algorithm>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/op_schema.h"
#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"
#include "lumen/ops.h"

namespace lumen {
namespace {

constexpr size_t kSmallOutputBytes = size_t{64} << 10;
constexpr size_t kMaxOutputBytes = size_t{16} << 20;
constexpr size_t kMaxPreparedBytes = size_t{1} << 30;  // per output and per pass

bool has_users(const Node *node) {
  return std::any_of(node->outputs().begin(), node->outputs().end(),
                     [](const Value *v) { return !v->users().empty(); });
}

// shape(x) and size(x) depend only on x's shape: known when that shape is static.
std::optional<std::vector<Tensor>> fold_from_static_shape(const Node *node) {
  const Value *x = node->input(0);
  if (!x || !x->has_shape() || !x->shape().is_static()) return std::nullopt;
  std::optional<Tensor> value = shape_query_value(node->op(), x->shape(), node->attrs());
  if (!value) return std::nullopt;
  return std::vector{*std::move(value)};
}

// The node's output types computed from its constant inputs (stored types may still be deferred
// when an input became constant earlier in this run); nullopt when inference fails.
std::optional<std::vector<TensorType>> output_types(const Node *node,
                                                    const std::vector<Tensor> &inputs) {
  std::vector<TensorType> types;
  types.reserve(inputs.size());
  for (const Tensor &t : inputs) types.push_back({t.dtype(), t.defined() ? t.shape() : Shape{}});
  InferContext ctx{.attrs = node->attrs(), .op = node->op(), .node = node->name()};
  for (size_t i = 0; i < inputs.size(); ++i) {
    ctx.inputs.push_back(inputs[i].defined() ? &types[i] : nullptr);
    ctx.values.push_back(inputs[i].defined() ? &inputs[i] : nullptr);
  }
  try {
    return infer_types(get_op(node->op()), ctx);
  } catch (const Error &) {
    return std::nullopt;
  } catch (const DeferredInference &) {
    return std::nullopt;
  }
}

// Whether a user of one of the node's outputs has a kernel that prepares its constant inputs at
// compile time (on any backend).
bool feeds_prepared_kernel(const Node *node) {
  for (const Value *out : node->outputs())
    for (const Node *user : out->users())
      for (const Backend *backend : backends())
        if (backend->find_prepare(user->op(), out->dtype())) return true;
  return false;
}

// The outputs' total bytes if every output is static and small enough to keep as a constant
// (limit above), else nullopt.
std::optional<size_t> fitting_bytes(const std::vector<TensorType> &outputs, size_t limit) {
  size_t total = 0;
  for (const TensorType &t : outputs) {
    if (!t.shape.is_static()) return std::nullopt;
    size_t bytes = dtype_size(t.dtype);
    for (int64_t d : t.shape)
      if (__builtin_mul_overflow(bytes, static_cast<size_t>(d), &bytes)) return std::nullopt;
    if (bytes > limit || __builtin_add_overflow(total, bytes, &total)) return std::nullopt;
  }
  return total;
}

// The backend that folds a node at compile time: the highest-priority one in host memory with a
// kernel for the op and the dtype that selects kernels (input 0's); empty when none has one.
std::string folding_backend(const std::string &op, const std::vector<Tensor> &inputs) {
  const DType dtype = !inputs.empty() && inputs[0].defined() ? inputs[0].dtype() : DType::Float32;
  for (const Backend *backend : backends())
    if (backend->device() == kHostDevice && backend->supports(op, dtype))
      return std::string(backend->name());
  return "";
}

// Runs a node whose inputs are all constants; nullopt when it must stay a node. `prepared_budget`
// is what is left of kMaxPreparedBytes in this run of the pass.
std::optional<std::vector<Tensor>> evaluate(const Node *node, size_t &prepared_budget) {
  std::vector<Tensor> inputs;
  size_t input_bytes = 0;
  for (const Value *in : node->inputs()) {
    if (in && !in->is_constant()) return std::nullopt;
    inputs.push_back(in ? in->constant() : Tensor());
    if (in) input_bytes += in->constant().nbytes();
  }
  if (std::none_of(inputs.begin(), inputs.end(), [](const Tensor &t) { return t.defined(); }))
    return std::nullopt;
  const auto types = output_types(node, inputs);
  if (!types) return std::nullopt;
  std::optional<size_t> bytes =
      fitting_bytes(*types, std::min(kMaxOutputBytes, std::max(kSmallOutputBytes, input_bytes)));
  if (!bytes && feeds_prepared_kernel(node) && (bytes = fitting_bytes(*types, prepared_budget)))
    prepared_budget -= *bytes;
  if (!bytes) return std::nullopt;
  const std::string backend = folding_backend(node->op(), inputs);
  if (backend.empty()) return std::nullopt;
  try {
    std::vector<Tensor> outputs = call_op(node->op(), inputs, node->attrs(), backend);
    if (outputs.size() != node->outputs().size()) return std::nullopt;
    return outputs;
  } catch (const Error &) {
    return std::nullopt;  // the node stays, and reports the same error when the graph runs
  }
}

class ConstantFolding final : public Pass {
 public:
  std::string_view name() const override { return "constant_folding"; }

  // Sweeps until one folds nothing. A folded reshape target makes the reshape's output shape
  // static only when types are re-inferred after the sweep, and only then can the shape ops that
  // read it fold: exporters compute each layer's reshape targets from the previous layer's shapes,
  // so every layer takes one more sweep (the zoo's 2-layer GPT-2, TorchScript export: the
  // pipeline's 8 rounds ran out with the second layer's shape arithmetic unfolded and its values
  // without static shapes, which the fusions need).
  bool run(Graph &graph, PassContext &ctx) override {
    constexpr int kMaxSweeps = 256;  // a bound only; each sweep folds at least one node
    bool changed = false;
    size_t prepared_budget = kMaxPreparedBytes;
    for (int sweep = 0; sweep < kMaxSweeps && sweep_once(graph, ctx, prepared_budget); ++sweep)
      changed = true;
    return changed;
  }

 private:
  bool sweep_once(Graph &graph, PassContext &ctx, size_t &prepared_budget) {
    bool changed = false;
    // Topological order: a node's folded result is a constant by the time its users are visited.
    for (Node *node : graph.topological_order()) {
      if (is_nondeterministic(node->op()) || !has_users(node)) continue;
      const bool shape_query = node->op() == "shape" || node->op() == "size";
      std::optional<std::vector<Tensor>> results =
          shape_query ? fold_from_static_shape(node) : std::nullopt;
      if (!results) results = evaluate(node, prepared_budget);
      if (!results) continue;

      bool rewired = false;
      std::string described;
      for (size_t i = 0; i < results->size(); ++i) {
        Value *out = node->output(i);
        if (out->users().empty()) continue;
        const Tensor &t = (*results)[i];
        Value *constant = graph.add_constant(graph.fresh_name(out->name()), t);
        if (!rewire_uses(graph, out, constant)) continue;
        rewired = true;
        described +=
            str(described.empty() ? "" : ", ", t.shape().to_string(), " ", dtype_name(t.dtype()));
      }
      if (!rewired) continue;
      ctx.note("folded ", node->op(), " '", node->name(), "' -> constant ", described);
      remove_if_dead(graph, node);
      changed = true;
    }
    if (changed) {
      // Users of the new constants may now have static shapes (reshape to a folded shape):
      // re-infer so later passes see them. A node that now fails inference would fail at run time
      // anyway; leave its deferred types and let that error surface there.
      try {
        graph.infer_types();
      } catch (const Error &) {
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding() {
  return std::make_unique<ConstantFolding>();
}

}  // namespace lumen
