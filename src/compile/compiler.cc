// Graph -> Executable, in the stages of shared/ARCHITECTURE.md, each in its own file: lower
// (compile/lower.h: half precision widened where only a slower backend has the kernel), place
// (compile/place.h: each node's backend, and why), insert copies (nothing yet: every backend
// computes in host memory), plan (compile/plan_memory.h: one arena per memory space when shapes
// are static) and freeze (here: slots, prepared kernels, the immutable step list). A graph whose
// input shapes are known only at run time also gets a ShapePlanCache (a planned plan per
// input-shape signature). Control-flow steps get their subgraphs compiled the same way.
#include <optional>
#include <unordered_map>

#include "compile/compiler.h"
#include "compile/lower.h"
#include "compile/place.h"
#include "compile/plan_memory.h"

#include "core/thread_pool.h"
#include "lumen/memory_budget.h"
#include "runtime/executable_impl.h"
#include "runtime/op_runner.h"
#include "runtime/shape_plan_cache.h"

namespace lumen {

std::unique_ptr<Executable::Impl> compile_plan(const Graph &graph, Runtime &runtime,
                                               const CompileOptions &options,
                                               const std::shared_ptr<PreparedCache> &prepared) {
  const MemoryBudgetScope budget(options.max_memory);
  auto impl = std::make_unique<Executable::Impl>();
  impl->pool = &runtime.thread_pool();
  impl->max_memory = options.max_memory;

  std::unordered_map<const Value *, int> slot_of;
  std::vector<bool> slot_static;
  auto slot = [&](const Value *v) {
    auto [it, inserted] = slot_of.emplace(v, static_cast<int>(impl->slot_info.size()));
    if (inserted) {
      slot_static.push_back(v->has_shape() && v->shape().is_static());
      impl->slot_info.push_back(
          {v->name(), v->dtype(), v->has_shape() ? v->shape() : Shape{}, v->element_type()});
      impl->initial_slots.push_back(v->is_constant() ? v->constant() : Tensor());
    }
    return it->second;
  };

  for (const Value *in : graph.inputs()) {
    impl->input_slots.push_back(slot(in));
    impl->inputs.push_back({in->name(), in->dtype(), in->shape(), in->element_type()});
    impl->input_rank_known.push_back(in->has_shape());
  }
  const std::vector<Node *> order = graph.topological_order();
  std::vector<int> last_use;  // by slot: index of the last step reading it
  for (size_t s = 0; s < order.size(); ++s) {
    const Node *n = order[s];
    ExecutionStep step;
    step.schema = &get_op(n->op());
    step.node = n->name();
    step.attrs = n->attrs();
    std::vector<const TensorType *> types;
    std::vector<TensorType> storage(n->inputs().size());
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const Value *in = n->inputs()[i];
      step.inputs.push_back(in ? slot(in) : -1);
      if (in) storage[i] = {in->dtype(), in->shape(), in->element_type()};
      types.push_back(in ? &storage[i] : nullptr);
    }
    for (const Value *out : n->outputs()) {
      step.outputs.push_back(slot(out));
      if (step.schema->optional_outputs)
        step.unused_outputs.push_back(
            step.outputs.size() > 1 && out->users().empty() &&
            std::count(graph.outputs().begin(), graph.outputs().end(), out) == 0);
    }
    const DType dtype = kernel_dtype(types);
    std::string placement_reason = "executor: control flow runs its subgraphs' steps";
    if ((step.builtin = find_builtin_step(n->op()))) {
      // The executor runs it (with its subgraphs, each compiled here).
      for (const auto &[name, value] : n->attrs().items())
        if (const auto *g = std::get_if<std::shared_ptr<Graph>>(&value))
          step.subgraphs[name] = compile_graph(**g, runtime, options, prepared);
    } else if (n->attrs().has_graphs()) {
      fail("op '", n->op(), "' (node '", n->name(), "') has subgraphs but is not control flow");
    } else {
      Placement placement = place_node(n->op(), dtype, runtime.options().backend, n->name());
      step.backend = placement.backend;
      step.kernel = step.backend->find_kernel(n->op(), dtype);
      placement_reason = std::move(placement.reason);
    }
    std::string algorithm;
    if (PrepareFn prepare = step.backend ? step.backend->find_prepare(n->op(), dtype) : nullptr) {
      PrepareContext pctx{
          .attrs = step.attrs, .op = n->op(), .node = n->name(), .pool = &runtime.thread_pool()};
      for (const Value *in : n->inputs()) {
        pctx.constants.push_back(in && in->is_constant() ? &in->constant() : nullptr);
        pctx.input_shapes.push_back(in && in->has_shape() ? in->shape() : Shape{});
      }
      for (const Value *out : n->outputs())
        pctx.output_shapes.push_back(out->has_shape() ? out->shape() : Shape{});
      step.prepared = prepared->get(prepare, pctx, step.backend->name(), dtype);
      algorithm = std::move(pctx.algorithm);
    }
    StepInfo info{n->name(),
                  n->op(),
                  step.backend ? std::string(step.backend->name()) : "executor",
                  std::string(dtype_name(dtype)),
                  n->attrs().to_string(),
                  std::move(algorithm),
                  std::move(placement_reason)};
    for (const Value *in : n->inputs())
      info.input_shapes.push_back(in && in->has_shape() ? in->shape() : Shape{});
    for (const Value *out : n->outputs())
      info.output_shapes.push_back(out->has_shape() ? out->shape() : Shape{});
    impl->step_info.push_back(std::move(info));
    last_use.resize(impl->slot_info.size(), -1);
    for (int in : step.inputs)
      if (in >= 0) last_use[in] = static_cast<int>(s);
    impl->steps.push_back(std::move(step));
  }
  last_use.resize(impl->slot_info.size(), -1);
  for (const Value *out : graph.outputs()) {
    impl->output_slots.push_back(slot(out));
    impl->outputs.push_back({out->name(), out->dtype(), out->has_shape() ? out->shape() : Shape{},
                             out->element_type()});
  }
  last_use.resize(impl->slot_info.size(), -1);
  impl->slot_is_output.assign(impl->slot_info.size(), false);
  for (int s : impl->output_slots) impl->slot_is_output[s] = true;
  impl->initial_types.resize(impl->slot_info.size());
  for (size_t s = 0; s < impl->slot_info.size(); ++s)
    if (const Tensor &c = impl->initial_slots[s]; c.defined())
      impl->initial_types[s] = {c.dtype(), c.shape(), impl->slot_info[s].element};
  // Graph outputs, inputs and constants are never released early.
  for (int s : impl->output_slots) last_use[s] = -1;
  for (int s : impl->input_slots) last_use[s] = -1;
  for (size_t s = 0; s < impl->slot_info.size(); ++s)
    if (impl->initial_slots[s].defined()) last_use[s] = -1;
  for (size_t s = 0; s < last_use.size(); ++s)
    if (last_use[s] >= 0) impl->steps[last_use[s]].release.push_back(static_cast<int>(s));

  plan_memory(*impl, last_use, slot_static);
  return impl;
}

std::unique_ptr<Executable::Impl> compile_graph(const Graph &input_graph, Runtime &runtime,
                                                const CompileOptions &options,
                                                const std::shared_ptr<PreparedCache> &prepared) {
  const std::optional<Graph> lowered =
      lower(input_graph, runtime.options().backend, options.opt_level);
  const Graph &graph = lowered ? *lowered : input_graph;
  std::unique_ptr<Executable::Impl> impl = compile_plan(graph, runtime, options, prepared);
  const bool dynamic_inputs =
      std::any_of(graph.inputs().begin(), graph.inputs().end(),
                  [](const Value *v) { return !v->has_shape() || !v->shape().is_static(); });
  if (!impl->planned && dynamic_inputs)
    impl->shape_plans = std::make_shared<ShapePlanCache>(graph.clone(), runtime, options, prepared);
  return impl;
}

Executable *Graph::compile(Runtime *runtime, const CompileOptions &options) const {
  if (!runtime) fail("compile: runtime is null");
  if (options.shape_cache_capacity == 0) fail("compile: shape_cache_capacity must be at least 1");
  verify();
  std::unique_ptr<Executable::Impl> impl =
      compile_graph(*this, *runtime, options, std::make_shared<PreparedCache>());
  return runtime->adopt(std::make_unique<Executable>(std::move(impl)));
}

}  // namespace lumen
