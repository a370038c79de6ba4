// Graph -> Executable: assigns every value a slot, places every node on a backend (the runtime's
// forced backend, or the preferred one with a kernel for its dtype), and lays out memory: with
// static shapes, intermediates get arena offsets from the memory planner; otherwise executions
// free each intermediate after its last use, and a graph whose input shapes are known only at run
// time also gets a ShapePlanCache (a planned plan per input-shape signature). Control-flow steps
// get their subgraphs compiled the same way.
#include <optional>
#include <unordered_map>

#include "compile/compiler.h"
#include "compile/memory_planner.h"
#include "compile/place.h"
#include "graph/passes/widen_half_precision.h"

#include "core/thread_pool.h"
#include "lumen/memory_budget.h"
#include "runtime/executable_impl.h"
#include "runtime/op_runner.h"
#include "runtime/shape_plan_cache.h"

namespace lumen {

namespace {

// A concat whose inputs each fill one contiguous range of its output (nothing but size-1 dims
// before the axis: batch 1 along channels) gets its inputs written there directly: they become
// parts of its buffer, and the concat step has nothing left to do. All inputs or none: each must
// be an intermediate of its own (no view, no in-place write, not a part already), used once here.
void place_concat_inputs(const ExecutionStep &step, const std::vector<ValueInfo> &slot_info,
                         const std::vector<int> &buffer_of,
                         std::vector<BufferLifetime> &lifetimes) {
  if (step.schema->name != "concat" || step.outputs.size() != 1) return;
  const int whole = buffer_of[step.outputs[0]];
  if (whole < 0) return;
  const Shape &shape = slot_info[step.outputs[0]].shape;
  const int64_t rank = static_cast<int64_t>(shape.rank());
  int64_t axis = step.attrs.get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return;
  for (int64_t d = 0; d < axis; ++d)
    if (shape[d] != 1) return;
  std::vector<int> parts;
  for (int in : step.inputs) {
    const int b = in >= 0 ? buffer_of[in] : -1;
    if (b < 0 || std::find(parts.begin(), parts.end(), b) != parts.end()) return;
    const BufferLifetime &life = lifetimes[b];
    if (life.view_of >= 0 || life.in_place_of >= 0 || life.part_of >= 0 ||
        life.memory_space != lifetimes[whole].memory_space ||
        slot_info[in].dtype != slot_info[step.outputs[0]].dtype)
      return;
    for (const BufferLifetime &other : lifetimes)  // nothing overwrites or views it
      if (other.view_of == b || other.in_place_of == b) return;
    parts.push_back(b);
  }
  // Every part must start on an aligned offset, like any buffer of the arena.
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    if (lifetimes[parts[i]].bytes % MemoryPlan::kAlignment != 0) return;
  size_t offset = 0;
  for (int b : parts) {
    lifetimes[b].part_of = whole;
    lifetimes[b].part_offset = offset;
    offset += lifetimes[b].bytes;
  }
}

// Where a step's outputs live: its backend's memory; builtin steps' are host tensors.
Allocator &allocator_of(const ExecutionStep &step) {
  return step.backend ? step.backend->allocator() : host_allocator();
}

// Intermediates are the slots produced by a step that are not graph outputs.
// `slot_static`: the slot's shape is known at compile time.
void plan_memory(Executable::Impl &impl, const std::vector<int> &last_use,
                 const std::vector<bool> &slot_static) {
  const size_t num_slots = impl.slot_info.size();
  std::vector<bool> is_output(num_slots, false);
  for (int s : impl.output_slots) is_output[s] = true;

  for (const ExecutionStep &step : impl.steps)
    for (int out : step.outputs)
      if (!slot_static[out]) return;  // shapes known only at run time: no plan
  std::vector<int> buffer_of(num_slots, -1);
  std::vector<int> slot_of_buffer;
  std::vector<BufferLifetime> lifetimes;
  std::vector<std::string> spaces;
  for (size_t s = 0; s < impl.steps.size(); ++s) {
    const ExecutionStep &step = impl.steps[s];
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const int out = step.outputs[o];
      const ValueInfo &info = impl.slot_info[out];
      // Objects (strings, containers) are made per run, like graph outputs; outputs not computed
      // take no memory.
      if (is_output[out] || impl.initial_slots[out].defined() || holds_objects(info.dtype) ||
          step.output_unused(o))
        continue;
      const std::string space = allocator_of(step).device().to_string();
      auto it = std::find(spaces.begin(), spaces.end(), space);
      if (it == spaces.end()) it = spaces.insert(spaces.end(), space);
      BufferLifetime life{.first_step = static_cast<int64_t>(s),
                          .last_step = std::max<int64_t>(static_cast<int64_t>(s), last_use[out]),
                          .bytes = static_cast<size_t>(checked_mul(
                              info.shape.numel(), static_cast<int64_t>(dtype_size(info.dtype)),
                              "intermediate size")),
                          .memory_space = static_cast<int>(it - spaces.begin())};
      const int in = step.inputs.empty() ? -1 : step.inputs[0];
      const bool input_in_arena = in >= 0 && buffer_of[in] >= 0;
      const bool same_bytes = input_in_arena && lifetimes[buffer_of[in]].bytes == life.bytes &&
                              lifetimes[buffer_of[in]].memory_space == life.memory_space;
      // A reshape-like step's output is a view of its input's memory.
      if (step.schema->view && out == step.outputs[0] && same_bytes) life.view_of = buffer_of[in];
      // An element-wise step may write over its input 0 when this is that input's last use.
      if (step.schema->elementwise && out == step.outputs[0] && input_in_arena &&
          last_use[in] == static_cast<int>(s) && impl.slot_info[in].dtype == info.dtype &&
          impl.slot_info[in].shape == info.shape)
        life.in_place_of = buffer_of[in];
      buffer_of[out] = static_cast<int>(lifetimes.size());
      slot_of_buffer.push_back(out);
      lifetimes.push_back(life);
    }
    place_concat_inputs(step, impl.slot_info, buffer_of, lifetimes);
  }
  // One arena per run for now: every backend allocates host memory.
  if (spaces.size() > 1) return;
  for (ExecutionStep &step : impl.steps)
    for (int out : step.outputs)
      step.output_types.push_back({impl.slot_info[out].dtype, impl.slot_info[out].shape});
  const MemoryPlan plan = ::lumen::plan_memory(lifetimes);
  impl.planned = true;
  impl.arena_allocator = impl.steps.empty() ? &host_allocator() : &allocator_of(impl.steps.front());
  impl.slot_offset.assign(num_slots, -1);
  for (size_t b = 0; b < lifetimes.size(); ++b)
    impl.slot_offset[slot_of_buffer[b]] = static_cast<int64_t>(plan.offsets[b]);
  // A view whose output landed on its input's bytes has nothing left to do at run time, nor has
  // a concat whose inputs are all parts of its output.
  for (ExecutionStep &step : impl.steps) {
    const int in = step.inputs.empty() ? -1 : step.inputs[0];
    step.skip = step.schema->view && in >= 0 && impl.slot_offset[in] >= 0 &&
                impl.slot_offset[in] == impl.slot_offset[step.outputs[0]];
    if (step.schema->name == "concat" && !step.outputs.empty() && buffer_of[step.outputs[0]] >= 0) {
      const int whole = buffer_of[step.outputs[0]];
      step.skip = !step.inputs.empty();
      for (int s : step.inputs)
        step.skip =
            step.skip && s >= 0 && buffer_of[s] >= 0 && lifetimes[buffer_of[s]].part_of == whole;
    }
  }
  impl.arena_bytes = plan.spaces.empty() ? 0 : plan.spaces[0].planned_bytes;
  // Each run takes an arena of that size: refused here, before any run allocates one.
  check_memory_budget(impl.arena_bytes, "the memory plan's arena (the intermediates of a run)");
  impl.memory.planned = true;
  for (size_t sp = 0; sp < plan.spaces.size(); ++sp) {
    MemorySpaceReport report{.space = spaces[sp],
                             .naive_bytes = plan.spaces[sp].naive_bytes,
                             .planned_bytes = plan.spaces[sp].planned_bytes,
                             .lower_bound_bytes = plan.spaces[sp].lower_bound_bytes};
    for (const BufferLifetime &life : lifetimes)
      if (life.memory_space == static_cast<int>(sp)) ++report.num_values;
    report.in_place = plan.in_place;
    report.views = plan.views;
    report.concat_parts = plan.parts;
    impl.memory.spaces.push_back(report);
  }
}

}  // namespace

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

// Compares where automatic placement puts `node`'s float16/bfloat16 kernel and its float32 one
// (placement dispatches on input 0's dtype): whether float32 lands on a faster backend
// (`strictly`), or on one at least as fast.
bool float32_placed_better(const Node &node, bool strictly) {
  const Value *first = node.inputs().empty() ? nullptr : node.inputs()[0];
  if (!first || !is_half_precision(first->dtype()) || find_builtin_step(node.op())) return false;
  const auto best = [&](DType dtype) -> const Backend * {
    for (const Backend *backend : backends())
      if (backend->placed_automatically() && backend->supports(node.op(), dtype)) return backend;
    return nullptr;
  };
  const Backend *half = best(first->dtype()), *full = best(DType::Float32);
  if (!full) return false;
  if (!half) return true;
  return strictly ? full->priority() > half->priority() : full->priority() >= half->priority();
}
bool slower_in_half_precision(const Node &node) {
  return float32_placed_better(node, true);
}
bool as_fast_in_float32(const Node &node) {
  return float32_placed_better(node, false);
}

std::unique_ptr<Executable::Impl> compile_graph(const Graph &input_graph, Runtime &runtime,
                                                const CompileOptions &options,
                                                const std::shared_ptr<PreparedCache> &prepared) {
  // Half-precision nodes that only a slower backend runs run in float32 on a faster one; a
  // backend named by the caller gets the graph as it is.
  std::optional<Graph> widened;
  const std::vector<Node *> nodes = input_graph.nodes();
  if (runtime.options().backend.empty() &&
      std::any_of(nodes.begin(), nodes.end(),
                  [](const Node *n) { return slower_in_half_precision(*n); })) {
    widened = input_graph.clone();
    widen_half_precision(*widened, slower_in_half_precision, as_fast_in_float32);
    // The float32 nodes get the fusions and layouts float32 models get.
    widened->optimize(options.opt_level, OptimizeOptions{.dump_from_env = false});
  }
  const Graph &graph = widened ? *widened : input_graph;
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
