#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>
#include <tuple>

#include "compile/cost_model.h"
#include "core/thread_pool.h"
#include "lumen/container.h"
#include "lumen/memory_budget.h"
#include "runtime/adaptive_plan.h"
#include "runtime/executable_impl.h"
#include "runtime/op_runner.h"
#include "runtime/run_deadline.h"
#include "runtime/shape_plan_cache.h"

namespace lumen {

Executable::Executable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executable::~Executable() = default;

const std::vector<ValueInfo> &Executable::inputs() const {
  return impl_->inputs;
}
const std::vector<ValueInfo> &Executable::outputs() const {
  return impl_->outputs;
}
const std::vector<StepInfo> &Executable::steps() const {
  return current_plan().step_info;
}
const MemoryReport &Executable::memory() const {
  return current_plan().memory;
}
std::vector<std::string> Executable::replans() const {
  return impl_->adaptive ? impl_->adaptive->history() : std::vector<std::string>{};
}
const Executable::Impl &Executable::current_plan() const {
  return impl_->adaptive ? impl_->adaptive->current(*impl_) : *impl_;
}

bool device_overlap() {
  static const bool on = [] {
    const char *v = std::getenv("LUMEN_DEVICE_OVERLAP");
    return !v || std::string_view(v) != "0";
  }();
  return on;
}

namespace {

// `rank_known`: false for an input the model gives no shape at all (any shape is accepted).
void check_input(const ValueInfo &expected, bool rank_known, const Tensor &actual) {
  if (!actual.defined()) fail("input '", expected.name, "' is an undefined tensor");
  if (is_container(expected.dtype) || is_container(actual.dtype())) {
    const std::vector<DType> got = item_type(actual);
    if (got[0] != expected.dtype ||
        !std::equal(got.begin() + 1, got.end(), expected.element.begin(), expected.element.end()))
      fail("input '", expected.name, "': expected ", type_name(expected.dtype, expected.element),
           ", got ", type_name(got[0], {got.begin() + 1, got.end()}));
    return;
  }
  bool shape_ok = !rank_known || actual.rank() == expected.shape.rank();
  for (size_t i = 0; rank_known && shape_ok && i < expected.shape.rank(); ++i)
    shape_ok = expected.shape[i] == kUnknownDim || expected.shape[i] == actual.shape()[i];
  if (actual.dtype() != expected.dtype || !shape_ok)
    fail("input '", expected.name, "': expected ", dtype_name(expected.dtype), " ",
         rank_known ? expected.shape.to_string() : "(any shape)", ", got ",
         dtype_name(actual.dtype()), " ", actual.shape().to_string());
}

// Rethrows the error being handled, named after the step's node when it does not name it already
// (kernels and inference do; an allocation over the memory budget or a shared helper does not).
[[noreturn]] void rethrow_naming(const ExecutionStep &step, const Error &e) {
  const std::string what = e.what();
  if (what.find("(node '" + step.node + "')") != std::string::npos) throw;
  step_fail(step, what);
}

// A copy step: the side that is not host memory does it, ordered on its stream
// (compile/insert_copies.h). A copy into host memory is left under way where the device allows
// (`arrivals`: the steps that read slot `out` wait for it); without `arrivals` (timed runs) it is
// done on return.
void copy_step(const ExecutionStep &step, const Tensor &src, Tensor &dst, DeviceStreams &streams,
               Arrivals *arrivals, int out) {
  Backend &engine = step.backend->device().is_host() ? *step.copy_from : *step.backend;
  Stream *stream = streams.enter(&engine);
  if (arrivals && dst.device().is_host() && device_overlap())
    arrivals->expect(out, engine.copy_async(dst, src, stream));
  else
    engine.copy(dst, src, stream);
}

// Whether input `t` is in other memory than `space`'s, where the plan reads inputs
// (CompileOptions::input_device; null: host memory). Sequences and optionals are host objects.
bool elsewhere(const Tensor &t, const Backend *space) {
  return t.defined() && !is_container(t.dtype()) &&
         t.device() != (space ? space->device() : kHostDevice);
}

// The inputs in the memory the plan reads them in: a tensor given elsewhere is copied there
// first; those already there are passed as they are.
std::vector<Tensor> inputs_where_read(const std::vector<Tensor> &inputs, Backend *space) {
  std::vector<Tensor> out = inputs;
  for (Tensor &t : out)
    if (elsewhere(t, space)) t = transfer(t, space ? *space : host_backend());
  return out;
}

}  // namespace

std::vector<Tensor> Executable::execute(const std::vector<Tensor> &inputs) const {
  return execute(inputs, nullptr);
}

std::vector<Tensor> Executable::execute(const std::vector<Tensor> &inputs,
                                        RunProfile *profile) const {
  // An adaptive executable runs its current plan, timing the runs that check it.
  const Impl *plan = impl_.get();
  bool timed = false;
  if (impl_->adaptive) std::tie(plan, timed) = impl_->adaptive->next(*impl_);
  RunProfile own;
  if (timed && !profile) profile = &own;
  StepTimer timer(profile);
  const Impl &p = *plan;
  const MemoryBudgetScope budget(p.max_memory);
  if (inputs.size() != p.input_slots.size())
    fail("execute: expected ", p.input_slots.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_input(p.inputs[i], p.input_rank_known[i], inputs[i]);
    if (!inputs[i].device().is_host() && !inputs[i].is_contiguous())
      fail("input '", p.inputs[i].name, "': a tensor in ", inputs[i].device().to_string(),
           " memory must be contiguous");
  }
  const bool move = std::any_of(inputs.begin(), inputs.end(),
                                [&](const Tensor &t) { return elsewhere(t, p.input_backend); });
  std::vector<Tensor> outputs =
      move ? p.run(inputs_where_read(inputs, p.input_backend), timer) : p.run(inputs, timer);
  timer.finish();
  if (timed) impl_->adaptive->observe(p, *profile);
  return outputs;
}

std::vector<Tensor> Executable::Impl::run(const std::vector<Tensor> &inputs,
                                          StepTimer &timer) const {
  // A graph with dims known only at run time runs the plan made for these inputs' shapes.
  std::shared_ptr<const Impl> plan = shape_plans ? shape_plans->plan_for(inputs) : nullptr;
  const Impl &p = plan ? *plan : *this;
  if (timer.profile()) timer.profile()->plan_steps = p.step_info;
  std::vector<Tensor> outputs =
      p.planned ? p.run_planned(inputs, timer) : p.run_dynamic(inputs, timer);
  if (timer.profile()) p.record_timings(*timer.profile());
  return outputs;
}

void Executable::Impl::record_timings(const RunProfile &profile) const {
  for (const StepTiming &t : profile.steps) {
    const ExecutionStep &s = steps[t.step];
    if (s.kernel)
      CostModel::instance().record(*s.backend, s.schema->name, s.dtype, s.work, t.duration_us,
                                   *pool);
  }
}

std::unique_ptr<RunState> Executable::Impl::acquire_state() const {
  {
    std::lock_guard<std::mutex> lock(states_mutex);
    if (!free_states.empty()) {
      auto state = std::move(free_states.back());
      free_states.pop_back();
      return state;
    }
  }
  // First run on this thread's behalf: its arenas and the tensors viewing them, reused afterwards.
  auto state = std::make_unique<RunState>();
  for (const Arena &a : arenas)
    state->arenas.push_back(a.allocator->allocate(std::max<size_t>(a.bytes, 1)));
  state->slots = initial_slots;
  for (size_t s = 0; s < slot_info.size(); ++s) {
    if (slot_offset[s] < 0) continue;
    const std::shared_ptr<Buffer> &arena = state->arenas[slot_arena[s]];
    state->slots[s] = Tensor::wrap(
        static_cast<std::byte *>(arena->data()) + slot_offset[s], slot_info[s].dtype,
        slot_info[s].shape, {}, [arena] {}, arena->device());
  }
  return state;
}

void Executable::Impl::release_state(std::unique_ptr<RunState> state) const {
  // A failed run may leave work queued that reads its tensors: it runs before they go.
  state->arrivals.clear();
  try {
    state->streams.synchronize();
  } catch (const Error &) {  // the device failed; the run's own error is what the caller sees
  }
  // Drop what lives outside the arena (the caller's inputs, outputs, strings and containers) so
  // the pool does not keep it alive.
  for (size_t s = 0; s < slot_offset.size(); ++s)
    if (slot_offset[s] < 0) state->slots[s] = initial_slots[s];
  state->contiguous_inputs.clear();
  std::lock_guard<std::mutex> lock(states_mutex);
  free_states.push_back(std::move(state));
}

// A builtin step of a planned run: its results land in the planned slots (values outside the
// arena take them as they are; intermediates are copied into their place in the arena).
void Executable::Impl::run_planned_builtin(const ExecutionStep &step,
                                           std::vector<Tensor> &slots) const {
  std::vector<Tensor> ins;
  for (int s : step.inputs) ins.push_back(s >= 0 ? slots[s] : Tensor());
  std::vector<Tensor> outs = step.builtin(step, ins);
  for (size_t o = 0; o < step.outputs.size(); ++o) {
    const int s = step.outputs[o];
    const TensorType &want = step.output_types[o];
    if (outs[o].dtype() != want.dtype || outs[o].shape() != want.shape)
      fail("op '", step.schema->name, "' (node '", step.node, "'): output ", o, " is ",
           dtype_name(outs[o].dtype()), " ", outs[o].shape().to_string(), ", planned as ",
           dtype_name(want.dtype), " ", want.shape.to_string());
    // A branch may pass an input through: when that input lives in this run's arena, the
    // caller must get a copy, not memory the next run overwrites.
    const bool passes_input = std::any_of(ins.begin(), ins.end(), [&](const Tensor &in) {
      return in.defined() && in.raw_data() == outs[o].raw_data();
    });
    if (slot_offset[s] < 0)
      slots[s] = passes_input ? outs[o].clone() : std::move(outs[o]);
    else
      std::memcpy(slots[s].raw_data(), outs[o].contiguous().raw_data(), outs[o].nbytes());
  }
}

std::vector<Tensor> Executable::Impl::run_planned(const std::vector<Tensor> &inputs,
                                                  StepTimer &timer) const {
  std::unique_ptr<RunState> state = acquire_state();
  struct Release {  // returns the state to the pool on every exit, errors included
    const Impl &impl;
    std::unique_ptr<RunState> &state;
    ~Release() { impl.release_state(std::move(state)); }
  } release{*this, state};
  std::vector<Tensor> &slots = state->slots;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &in = inputs[i];
    if (in.is_contiguous()) {
      slots[input_slots[i]] = in;
    } else {
      state->contiguous_inputs.push_back(in.contiguous());
      slots[input_slots[i]] = state->contiguous_inputs.back();
    }
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const ExecutionStep &step = steps[i];
    if (step.skip) continue;
    check_run_deadline(step.schema->name, step.node);
    timer.begin();
    state->arrivals.await(step.inputs);
    state->arrivals.await(step.host_inputs);
    if (step.builtin) {
      state->streams.enter(nullptr);
      run_planned_builtin(step, slots);
      timer.end(i);
      continue;
    }
    state->kernel_inputs.clear();
    state->kernel_outputs.clear();
    try {
      for (int s : step.inputs) state->kernel_inputs.push_back(s >= 0 ? &slots[s] : nullptr);
      for (size_t o = 0; o < step.outputs.size(); ++o) {
        const int s = step.outputs[o];
        if (step.output_unused(o)) {
          state->kernel_outputs.push_back(nullptr);
          continue;
        }
        if (slot_offset[s] < 0)  // a graph output: the caller keeps it, so it gets its own memory
          slots[s] = Tensor::empty(step.output_types[o].shape, step.output_types[o].dtype,
                                   &step.backend->allocator());
        state->kernel_outputs.push_back(&slots[s]);
      }
      KernelContext ctx{.inputs = std::move(state->kernel_inputs),
                        .outputs = std::move(state->kernel_outputs),
                        .attrs = step.attrs,
                        .pool = *pool,
                        .stream = step.copy_from ? nullptr : state->streams.enter(step.backend),
                        .op = step.schema->name,
                        .node = step.node,
                        .prepared = step.prepared.get()};
      for (int h : step.host_inputs) ctx.host_inputs.push_back(h >= 0 ? &slots[h] : nullptr);
      if (step.copy_from)
        copy_step(step, *ctx.inputs[0], *ctx.outputs[0], state->streams,
                  timer.profile() ? nullptr : &state->arrivals, step.outputs[0]);
      else
        step.kernel(ctx);
      state->kernel_inputs = std::move(ctx.inputs);  // keep the capacity for the next step
      state->kernel_outputs = std::move(ctx.outputs);
    } catch (const Error &e) {
      rethrow_naming(step, e);
    }
    timer.end(i, state->streams.of(step.backend));
  }
  state->arrivals.await_all();
  state->streams.synchronize();  // the arenas are reused by the next run
  std::vector<Tensor> outputs;
  outputs.reserve(output_slots.size());
  for (int s : output_slots) outputs.push_back(slots[s]);
  return outputs;
}

std::vector<Tensor> Executable::Impl::run_dynamic(const std::vector<Tensor> &inputs,
                                                  StepTimer &timer) const {
  std::vector<Tensor> slots = initial_slots;
  // Each slot's type, inferred per step from the real shapes (graphs may have dims known only at
  // run time): constants' from the compiled plan, the others' recorded once when the slot is
  // written. Steps read types, values and kernel inputs through pointers: a step copies no Tensor
  // and no Shape (their allocations were most of a small step's cost).
  std::vector<TensorType> written(slots.size());
  std::vector<const TensorType *> type_of(slots.size(), nullptr);
  for (size_t s = 0; s < slots.size(); ++s)
    if (initial_slots[s].defined()) type_of[s] = &initial_types[s];
  const auto set_slot = [&](int s, Tensor t) {
    written[s] = {t.dtype(), t.defined() ? t.shape() : Shape{}};
    type_of[s] = &written[s];
    slots[s] = std::move(t);
  };
  for (size_t i = 0; i < inputs.size(); ++i) set_slot(input_slots[i], inputs[i]);
  DeviceStreams streams;
  Arrivals arrivals;  // after streams: gone first, so nothing waits on a stream that is gone
  std::vector<const TensorType *> in_types;
  std::vector<const Tensor *> in_values;
  for (size_t si = 0; si < steps.size(); ++si) {
    const ExecutionStep &step = steps[si];
    check_run_deadline(step.schema->name, step.node);
    timer.begin();
    arrivals.await(step.inputs);
    arrivals.await(step.host_inputs);
    in_types.clear();
    in_values.clear();
    for (int s : step.inputs) {
      in_types.push_back(s >= 0 ? type_of[s] : nullptr);
      in_values.push_back(s >= 0 ? &slots[s] : nullptr);
    }
    std::vector<Tensor> outs;
    try {
      if (step.copy_from) {
        const Tensor &src = *in_values[0];
        outs.push_back(Tensor::empty(src.shape(), src.dtype(), &step.backend->allocator()));
        copy_step(step, src, outs.back(), streams, timer.profile() ? nullptr : &arrivals,
                  step.outputs[0]);
      } else if (step.builtin) {
        streams.enter(nullptr);
        std::vector<Tensor> step_inputs;
        for (int s : step.inputs) step_inputs.push_back(s >= 0 ? slots[s] : Tensor());
        outs = step.builtin(step, step_inputs);
      } else {
        // Inference reads values in host memory only: a step on a device gets the host copies
        // of its inputs where they have one (constants, values made on the host).
        std::vector<const Tensor *> host_values;
        if (!step.host_inputs.empty())
          for (size_t i = 0; i < step.host_inputs.size(); ++i)
            host_values.push_back(step.host_inputs[i] >= 0 ? &slots[step.host_inputs[i]] : nullptr);
        const bool on_device = !step.host_inputs.empty();
        InferContext ctx{.inputs = std::move(in_types),
                         .attrs = step.attrs,
                         .op = step.schema->name,
                         .node = step.node,
                         .values = on_device ? host_values : std::move(in_values)};
        // The kernel sizes its outputs: inference would do its work a second time.
        const bool by_kernel = step.schema->kernel_sizes_outputs;
        std::vector<TensorType> out_types;
        try {
          if (by_kernel)
            check_inputs(*step.schema, ctx);
          else
            out_types = infer_types(*step.schema, ctx);
        } catch (const DeferredInference &) {  // a value it needs exists only on the device
          step_fail(step, "its output shape depends on an input value made on ",
                    step.backend->device().to_string(), "; run it on the CPU");
        }
        in_types = std::move(ctx.inputs);
        if (!on_device) in_values = std::move(ctx.values);
        // A reshape-like step views its input's memory, as in a planned run; a graph output gets
        // its own copy (the caller keeps it, and it must not alias an input or a weight).
        if (step.schema->view && !by_kernel && !slot_is_output[step.outputs[0]] &&
            in_values[0]->device().is_host())
          outs.push_back(in_values[0]->reshape(out_types[0].shape));
        else
          outs = run_kernel(step.kernel, *step.backend, in_values, by_kernel ? nullptr : &out_types,
                            step.outputs.size(), step.attrs, *pool, step.schema->name, step.node,
                            step.prepared.get(), step.unused_outputs, streams.enter(step.backend),
                            host_values);
      }
    } catch (const Error &e) {
      rethrow_naming(step, e);
    }
    for (size_t i = 0; i < outs.size(); ++i) set_slot(step.outputs[i], std::move(outs[i]));
    for (int s : step.release) {
      streams.release(slots[s]);
      slots[s] = Tensor();
    }
    timer.end(si, streams.of(step.backend));
  }
  arrivals.await_all();
  streams.synchronize();
  std::vector<Tensor> outputs;
  outputs.reserve(output_slots.size());
  for (int s : output_slots) outputs.push_back(slots[s]);
  return outputs;
}

std::vector<Tensor> Executable::execute(const std::map<std::string, Tensor> &feeds,
                                        RunProfile *profile) const {
  std::vector<Tensor> ordered;
  for (const ValueInfo &in : impl_->inputs) {
    auto it = feeds.find(in.name);
    if (it == feeds.end()) fail("execute: missing input '", in.name, "'");
    ordered.push_back(it->second);
  }
  if (feeds.size() != ordered.size()) {
    for (const auto &[name, tensor] : feeds) {
      bool known = false;
      for (const ValueInfo &in : impl_->inputs) known = known || in.name == name;
      if (!known) fail("execute: unknown input '", name, "'");
    }
  }
  return execute(ordered, profile);
}

std::string Executable::summary() const {
  std::ostringstream out;
  out << "Executable: " << impl_->inputs.size() << " inputs, " << impl_->outputs.size()
      << " outputs, " << impl_->steps.size() << " steps\n";
  for (const StepInfo &s : impl_->step_info)
    out << "  " << s.node << " (" << s.op << ") on " << s.backend << "\n";
  out << impl_->memory.to_string();
  return out.str();
}

}  // namespace lumen

namespace lumen {

std::string MemoryReport::to_string() const {
  if (!planned) return "memory: not planned (shapes known only at run time)\n";
  std::ostringstream out;
  auto mib = [](size_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  out.setf(std::ios::fixed);
  out.precision(2);
  for (const MemorySpaceReport &s : spaces) {
    out << "memory " << s.space << ": naive " << mib(s.naive_bytes) << " MiB, planned "
        << mib(s.planned_bytes) << " MiB, lower bound " << mib(s.lower_bound_bytes) << " MiB ("
        << s.num_values << " values, " << s.in_place << " written in place, " << s.views
        << " views, " << s.concat_parts << " concat parts)\n";
  }
  return out.str();
}

}  // namespace lumen
