// Graph -> Executable, in the stages of shared/ARCHITECTURE.md, each in its own file: lower
// (compile/lower.h: half precision widened where only a slower backend has the kernel), place
// (compile/place.h: each node's backend, and why), insert copies (compile/insert_copies.h: copy
// steps where a value crosses memory spaces), plan (compile/plan_memory.h: one arena per memory
// space when shapes are static) and freeze (here: a slot per value and space it is held in,
// constants uploaded to the spaces that read them, prepared kernels, the immutable step list). A
// graph whose input shapes are known only at run time also gets a ShapePlanCache (a planned plan
// per input-shape signature). Control-flow steps get their subgraphs compiled the same way.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>

#include "compile/compiler.h"
#include "compile/insert_copies.h"
#include "compile/lower.h"
#include "compile/place.h"
#include "compile/plan_memory.h"
#include "runtime/adaptive_plan.h"

#include "core/thread_pool.h"
#include "lumen/memory_budget.h"
#include "runtime/executable_impl.h"
#include "runtime/op_runner.h"
#include "runtime/shape_plan_cache.h"

namespace lumen {

namespace {

// The steps to place and the values they read and write (ids by first appearance), from a graph's
// nodes in topological order.
struct PlacementInput {
  std::vector<PlacementStep> steps;
  std::vector<PlacementValue> values;
  std::vector<const Value *> value_of;  // by id
  std::unordered_map<const Value *, int> id_of;
};

PlacementInput placement_input(const Graph &graph, const std::vector<Node *> &order) {
  PlacementInput in;
  const auto id = [&](const Value *v) {
    if (!v) return -1;
    auto [it, inserted] = in.id_of.emplace(v, static_cast<int>(in.values.size()));
    if (inserted) {
      const double bytes = v->has_shape() && !holds_objects(v->dtype())
                               ? estimated_numel(v->shape()) * dtype_size(v->dtype())
                               : 0;
      in.values.push_back({.bytes = bytes,
                           .constant = v->is_constant(),
                           .graph_input = v->is_input(),
                           .objects = holds_objects(v->dtype())});
      in.value_of.push_back(v);
    }
    return it->second;
  };
  for (const Value *v : graph.inputs()) id(v);
  for (const Node *n : order) {
    if (n->attrs().has_graphs() && !find_builtin_step(n->op()))
      fail("op '", n->op(), "' (node '", n->name(), "') has subgraphs but is not control flow");
    PlacementStep step{.op = n->op(), .node = n->name(), .attrs = &n->attrs()};
    std::vector<TensorType> storage(n->inputs().size()), outputs;
    std::vector<const TensorType *> types;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const Value *v = n->inputs()[i];
      step.inputs.push_back(id(v));
      if (v) storage[i] = {v->dtype(), v->has_shape() ? v->shape() : Shape{}, v->element_type()};
      types.push_back(v ? &storage[i] : nullptr);
      step.input_types.push_back(
          {.present = v != nullptr, .dtype = storage[i].dtype, .shape = storage[i].shape});
    }
    for (const Value *v : n->outputs()) {
      step.outputs.push_back(id(v));
      outputs.push_back({v->dtype(), v->has_shape() ? v->shape() : Shape{}});
      step.outputs_used.push_back(!v->users().empty() || std::count(graph.outputs().begin(),
                                                                    graph.outputs().end(), v) != 0);
    }
    step.dtype = kernel_dtype(types);
    step.executor = find_builtin_step(n->op()) != nullptr;
    if (!step.executor) step.work = estimate_work(n->op(), n->attrs(), types, outputs);
    in.steps.push_back(std::move(step));
  }
  for (const Value *v : graph.outputs()) in.values[id(v)].graph_output = true;
  return in;
}

// CompileOptions::input_device / output_device as a backend standing for the memory space (null:
// host memory).
Backend *io_backend(const std::string &name, const char *option) {
  if (name.empty()) return nullptr;
  Backend &b = get_backend(name);
  std::string why_not;
  if (!b.available(&why_not)) fail("compile: ", option, " '", name, "' is unavailable: ", why_not);
  return b.device().is_host() ? nullptr : &b;
}

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1 << 20)
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1 << 20));
  else
    std::snprintf(text, sizeof text, "%.0f bytes", bytes);
  return text;
}

}  // namespace

std::unique_ptr<Executable::Impl> compile_plan(const Graph &graph, Runtime &runtime,
                                               const CompileOptions &options,
                                               const std::shared_ptr<PreparedCache> &prepared) {
  const MemoryBudgetScope budget(options.max_memory);
  auto impl = std::make_unique<Executable::Impl>();
  impl->pool = &runtime.thread_pool();
  impl->max_memory = options.max_memory;

  // Place, then insert the copies between memory spaces.
  const std::vector<Node *> order = graph.topological_order();
  const PlacementInput placing = placement_input(graph, order);
  const IoSpaces io{io_backend(options.input_device, "input_device"),
                    io_backend(options.output_device, "output_device")};
  impl->input_backend = io.inputs;
  const std::vector<Placement> placements = place_steps(
      placing.steps, placing.values, runtime.options().backend, runtime.thread_pool(), io);
  const CopyPlan copies = insert_copies(placing.steps, placing.values, placements, io);
  Backend &host = host_backend();

  // Freeze: a slot per value and memory space it is held in.
  std::vector<bool> slot_static;
  const auto new_slot = [&](ValueInfo info, Tensor initial, bool is_static) {
    slot_static.push_back(is_static);
    impl->slot_info.push_back(std::move(info));
    impl->initial_slots.push_back(std::move(initial));
    return static_cast<int>(impl->slot_info.size() - 1);
  };
  std::map<std::pair<const Value *, std::string>, int> slot_of;  // (value, space) -> slot
  const auto info_of = [](const Value *v) {
    return ValueInfo{v->name(), v->dtype(), v->has_shape() ? v->shape() : Shape{},
                     v->element_type()};
  };
  const auto is_static = [](const Value *v) { return v->has_shape() && v->shape().is_static(); };
  // The slot of `v` where it is made: host memory for inputs and constants.
  const auto slot = [&](const Value *v) {
    const auto key = std::make_pair(v, std::string());
    if (auto it = slot_of.find(key); it != slot_of.end()) return it->second;
    return slot_of[key] =
               new_slot(info_of(v), v->is_constant() ? v->constant() : Tensor(), is_static(v));
  };
  // The slot of `v` in the memory of `backend`: where it is made, a copy step's output, or for a
  // constant its copy uploaded now (once per space).
  std::vector<Backend *> made_on(placing.values.size(), &host);
  for (const Value *in : graph.inputs())
    made_on[placing.id_of.at(in)] = &io.of_input(placing.values[placing.id_of.at(in)]);
  const auto slot_in = [&](const Value *v, Backend &backend) {
    const int id = placing.id_of.at(v);
    if (made_on[id]->device() == backend.device()) return slot(v);
    const auto key = std::make_pair(v, backend.device().to_string());
    if (auto it = slot_of.find(key); it != slot_of.end()) return it->second;
    if (!v->is_constant())
      fail("compile: value '", v->name(), "' is read on ", key.second,
           " before a copy puts it there");
    Tensor uploaded =
        Tensor::empty(v->constant().shape(), v->constant().dtype(), &backend.allocator());
    backend.copy(uploaded, v->constant(), nullptr);
    return slot_of[key] = new_slot(info_of(v), std::move(uploaded), true);
  };
  const auto emit_copy = [&](const CopyStep &c) {
    const Value *v = placing.value_of[c.value];
    ExecutionStep step;
    step.schema = &copy_step_schema();
    step.node = str(v->name(), " -> ", c.to->device().to_string());
    step.backend = c.to;
    step.copy_from = c.from;
    step.inputs = {slot_in(v, *c.from)};
    ValueInfo info = info_of(v);
    info.name = step.node;
    step.outputs = {new_slot(info, Tensor(), is_static(v))};
    slot_of[{v, c.to->device().to_string()}] = step.outputs[0];
    Backend &engine = c.to->device().is_host() ? *c.from : *c.to;
    const double bytes = placing.values[c.value].bytes;
    StepInfo sinfo{step.node,
                   "copy",
                   std::string(engine.name()),
                   std::string(dtype_name(v->dtype())),
                   "",
                   "",
                   str("copy: ", c.from->device().to_string(), " -> ", c.to->device().to_string(),
                       ", ", format_bytes(bytes))};
    sinfo.input_shapes = sinfo.output_shapes = {info.shape};
    impl->step_info.push_back(std::move(sinfo));
    impl->steps.push_back(std::move(step));
  };

  for (const Value *in : graph.inputs()) {
    impl->input_slots.push_back(slot(in));
    impl->inputs.push_back(info_of(in));
    impl->inputs.back().shape = in->shape();
    impl->input_rank_known.push_back(in->has_shape());
  }
  for (size_t s = 0; s < order.size(); ++s) {
    for (const CopyStep &c : copies.before[s]) emit_copy(c);
    const Node *n = order[s];
    const PlacementStep &placed = placing.steps[s];
    Backend &runs_on = placements[s].backend ? *placements[s].backend : host;
    ExecutionStep step;
    step.schema = &get_op(n->op());
    step.node = n->name();
    step.attrs = n->attrs();
    for (const Value *in : n->inputs()) step.inputs.push_back(in ? slot_in(in, runs_on) : -1);
    if (!runs_on.device().is_host())
      for (const Value *in : n->inputs())
        step.host_inputs.push_back(
            in && made_on[placing.id_of.at(in)]->device().is_host() ? slot(in) : -1);
    for (const Value *out : n->outputs()) {
      made_on[placing.id_of.at(out)] = &runs_on;
      step.outputs.push_back(slot(out));
      if (step.schema->optional_outputs)
        step.unused_outputs.push_back(
            step.outputs.size() > 1 && out->users().empty() &&
            std::count(graph.outputs().begin(), graph.outputs().end(), out) == 0);
    }
    const DType dtype = placed.dtype;
    if ((step.builtin = find_builtin_step(n->op()))) {
      // The executor runs it (with its subgraphs, each compiled here).
      for (const auto &[name, value] : n->attrs().items())
        if (const auto *g = std::get_if<std::shared_ptr<Graph>>(&value))
          step.subgraphs[name] = compile_graph(**g, runtime, options, prepared);
    } else {
      step.backend = placements[s].backend;
      step.kernel = step.backend->find_kernel(n->op(), dtype);
      step.work = placed.work;
      step.dtype = dtype;
    }
    std::string algorithm;
    if (PrepareFn prepare = step.backend ? step.backend->find_prepare(n->op(), dtype) : nullptr) {
      std::unique_ptr<Stream> stream = step.backend->new_stream();
      PrepareContext pctx{.attrs = step.attrs,
                          .op = n->op(),
                          .node = n->name(),
                          .pool = &runtime.thread_pool(),
                          .allocator = &step.backend->allocator(),
                          .stream = stream.get()};
      for (const Value *in : n->inputs()) {
        pctx.constants.push_back(in && in->is_constant() ? &in->constant() : nullptr);
        pctx.input_shapes.push_back(in && in->has_shape() ? in->shape() : Shape{});
      }
      for (const Value *out : n->outputs())
        pctx.output_shapes.push_back(out->has_shape() ? out->shape() : Shape{});
      step.prepared = prepared->get(prepare, pctx, step.backend->name(), dtype);
      stream->synchronize();
      algorithm = std::move(pctx.algorithm);
    }
    StepInfo info{n->name(),
                  n->op(),
                  step.backend ? std::string(step.backend->name()) : "executor",
                  std::string(dtype_name(dtype)),
                  n->attrs().to_string(),
                  std::move(algorithm),
                  placements[s].reason,
                  {},
                  {},
                  placements[s].estimates_us,
                  placements[s].copies_us};
    for (const Value *in : n->inputs())
      info.input_shapes.push_back(in && in->has_shape() ? in->shape() : Shape{});
    for (const Value *out : n->outputs())
      info.output_shapes.push_back(out->has_shape() ? out->shape() : Shape{});
    impl->step_info.push_back(std::move(info));
    impl->steps.push_back(std::move(step));
  }
  for (const CopyStep &c : copies.after) emit_copy(c);
  for (const Value *out : graph.outputs()) {
    impl->output_slots.push_back(slot_in(out, io.of_output(placing.values[placing.id_of.at(out)])));
    impl->outputs.push_back(info_of(out));
  }

  // Each slot's last reader releases it (dynamic runs); graph outputs, inputs and constants live
  // on.
  std::vector<int> last_use(impl->slot_info.size(), -1);
  for (size_t s = 0; s < impl->steps.size(); ++s)
    for (int in : impl->steps[s].inputs)
      if (in >= 0) last_use[in] = static_cast<int>(s);
  impl->slot_is_output.assign(impl->slot_info.size(), false);
  for (int s : impl->output_slots) impl->slot_is_output[s] = true;
  impl->initial_types.resize(impl->slot_info.size());
  for (size_t s = 0; s < impl->slot_info.size(); ++s)
    if (const Tensor &c = impl->initial_slots[s]; c.defined())
      impl->initial_types[s] = {c.dtype(), c.shape(), impl->slot_info[s].element};
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
  auto prepared = std::make_shared<PreparedCache>();
  std::unique_ptr<Executable::Impl> impl = compile_graph(*this, *runtime, options, prepared);
  if (options.adaptive)
    impl->adaptive = std::make_shared<AdaptivePlan>(clone(), *runtime, options, prepared);
  return runtime->adopt(std::make_unique<Executable>(std::move(impl)));
}

}  // namespace lumen
