// Graph -> Executable: assigns every value a slot, places every node on a backend (the runtime's
// forced backend, or the preferred one with a kernel for its dtype), and computes when each slot
// dies so executions free intermediates as early as possible.
#include <unordered_map>

#include "core/thread_pool.h"
#include "runtime/executable_impl.h"
#include "runtime/op_runner.h"

namespace lumen {

Executable *Graph::compile(Runtime *runtime) const {
  if (!runtime) fail("compile: runtime is null");
  verify();
  auto impl = std::make_unique<Executable::Impl>();
  impl->pool = &runtime->thread_pool();

  std::unordered_map<const Value *, int> slot_of;
  auto slot = [&](const Value *v) {
    auto [it, inserted] = slot_of.emplace(v, static_cast<int>(impl->slot_info.size()));
    if (inserted) {
      impl->slot_info.push_back({v->name(), v->dtype(), v->has_shape() ? v->shape() : Shape{}});
      impl->initial_slots.push_back(v->is_constant() ? v->constant() : Tensor());
    }
    return it->second;
  };

  for (const Value *in : inputs_) {
    impl->input_slots.push_back(slot(in));
    impl->inputs.push_back({in->name(), in->dtype(), in->shape()});
  }
  const std::vector<Node *> order = topological_order();
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
      if (in) storage[i] = {in->dtype(), in->shape()};
      types.push_back(in ? &storage[i] : nullptr);
    }
    for (const Value *out : n->outputs()) step.outputs.push_back(slot(out));
    const DType dtype = kernel_dtype(types);
    step.backend = &select_backend(n->op(), dtype, runtime->options().backend, n->name());
    step.kernel = step.backend->find_kernel(n->op(), dtype);
    impl->step_info.push_back({n->name(), n->op(), std::string(step.backend->name()),
                               std::string(dtype_name(dtype)), n->attrs().to_string()});
    last_use.resize(impl->slot_info.size(), -1);
    for (int in : step.inputs)
      if (in >= 0) last_use[in] = static_cast<int>(s);
    impl->steps.push_back(std::move(step));
  }
  last_use.resize(impl->slot_info.size(), -1);
  for (const Value *out : outputs_) {
    impl->output_slots.push_back(slot(out));
    impl->outputs.push_back({out->name(), out->dtype(), out->has_shape() ? out->shape() : Shape{}});
  }
  last_use.resize(impl->slot_info.size(), -1);
  // Graph outputs, inputs and constants are never released early.
  for (int s : impl->output_slots) last_use[s] = -1;
  for (int s : impl->input_slots) last_use[s] = -1;
  for (size_t s = 0; s < impl->slot_info.size(); ++s)
    if (impl->initial_slots[s].defined()) last_use[s] = -1;
  for (size_t s = 0; s < last_use.size(); ++s)
    if (last_use[s] >= 0) impl->steps[last_use[s]].release.push_back(static_cast<int>(s));

  return runtime->adopt(std::make_unique<Executable>(std::move(impl)));
}

}  // namespace lumen
