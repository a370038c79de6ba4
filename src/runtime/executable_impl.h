// What a compiled graph is made of: value slots and a list of kernel calls over them. Built by the
// compiler, read-only afterwards, so executions can share it across threads.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/op_schema.h"
#include "graph/op_work.h"
#include "lumen/lumen.h"

namespace lumen {

class ShapePlanCache;
class AdaptivePlan;
struct ExecutionStep;

// Runs a step the executor does itself, without a backend kernel: control flow (if, loop, scan:
// by running its subgraphs' plans) and sequence/optional ops (containers of host objects).
using BuiltinStepFn = std::vector<Tensor> (*)(const ExecutionStep &step,
                                              const std::vector<Tensor> &inputs);
// Builtin steps register from their own file; nullptr when `op` is not one.
void register_builtin_step(std::string_view op, BuiltinStepFn fn);
BuiltinStepFn find_builtin_step(std::string_view op);

struct ExecutionStep {
  const OpSchema *schema = nullptr;
  std::string node;
  Attributes attrs;
  Backend *backend = nullptr;  // null for builtin steps; a copy step's destination
  KernelFn kernel = nullptr;
  // A copy step (compile/insert_copies.h) from this backend's memory into `backend`'s; the side
  // that is not host memory does the copy.
  Backend *copy_from = nullptr;
  OpWork work;  // the estimate placement used; real timings are recorded against it
  DType dtype = DType::Float32;          // the kernel dtype
  std::shared_ptr<const void> prepared;  // what the kernel's prepare function built, if any
  std::vector<int> inputs;               // slot per input, -1 for an omitted optional input
  // Per input, where a step on a device reads a copy: the slot of the value in host memory, which
  // run-time shape inference reads (-1: none, the value was made on the device). Empty for steps
  // on host memory.
  std::vector<int> host_inputs;
  std::vector<int> outputs;          // slot per output
  std::vector<bool> unused_outputs;  // per output (empty: all used): see optional_outputs
  std::vector<int> release;          // slots whose last use is this step (dynamic runs free them)
  std::vector<TensorType> output_types;  // compile-time types (planned executables only)
  bool skip = false;  // planned: a view whose output already aliases its input in the arena
  // Builtin steps: no kernel (and no backend); `builtin` runs them, with the compiled subgraphs
  // by attribute name ("then_branch", "else_branch", "body") for control flow.
  BuiltinStepFn builtin = nullptr;
  bool output_unused(size_t o) const { return o < unused_outputs.size() && unused_outputs[o]; }
  std::map<std::string, std::shared_ptr<const Executable::Impl>> subgraphs;
};

// Throws lumen::Error prefixed with "op 'OP' (node 'NODE'): ".
template <class... Args>
[[noreturn]] void step_fail(const ExecutionStep &step, const Args &...args) {
  fail("op '", step.schema->name, "' (node '", step.node, "'): ", args...);
}

// A builtin step's compiled subgraph by attribute name, and one run of a subgraph's plan on
// `inputs` (checked against what the plan was made for).
const Executable::Impl &subgraph(const ExecutionStep &step, const char *name);
std::vector<Tensor> run_subgraph(const ExecutionStep &step, const Executable::Impl &plan,
                                 const std::vector<Tensor> &inputs);

// Whether runs let devices work while the host goes on (the default): streams flushed where a run
// leaves a device, copies to the host left under way until a step reads them. LUMEN_DEVICE_OVERLAP=0
// turns it off (each copy to the host waits; device work starts only then), to measure what it
// gives.
bool device_overlap();

// A stream per device backend a run uses, made on first use and kept with the run state: steps
// on one device queue their work on it in order; copies and the end of a run wait for it.
class DeviceStreams {
 public:
  // nullptr for host-memory backends (their kernels run synchronously).
  Stream *of(Backend *backend) {
    if (!backend || backend->device().is_host()) return nullptr;
    for (auto &[b, s] : streams_)
      if (b == backend) return s.get();
    streams_.emplace_back(backend, backend->new_stream());
    return streams_.back().second.get();
  }
  // The stream of a step about to run (nullptr on the host). Where the run leaves a device, its
  // stream is flushed: the device works through what was queued while the next steps run
  // elsewhere.
  Stream *enter(Backend *backend) {
    Stream *s = of(backend);
    if (current_ && current_ != s && device_overlap()) current_->flush();
    current_ = s;
    return s;
  }
  void synchronize() {
    for (auto &entry : streams_) entry.second->synchronize();
    current_ = nullptr;
  }
  // A tensor a run drops: kept allocated until the work queued on its device has run (work
  // recorded or under way may still read it; its memory must not be handed out before).
  void release(const Tensor &t) {
    if (!t.defined() || t.device().is_host()) return;
    for (auto &[b, s] : streams_)
      if (b->device() == t.device()) s->retain(t.buffer());
  }

 private:
  std::vector<std::pair<Backend *, std::unique_ptr<Stream>>> streams_;
  Stream *current_ = nullptr;
};

// Copies into host memory still under way (Backend::copy_async), by slot: a step that reads one
// waits for it first, and a run waits for all of them before it returns. What the host does in
// between overlaps with the device.
class Arrivals {
 public:
  void expect(int slot, std::unique_ptr<Event> event) {
    if (!event) return;
    if (by_slot_.size() <= static_cast<size_t>(slot)) by_slot_.resize(slot + 1);
    by_slot_[slot] = std::move(event);
    ++count_;
  }
  void await(const std::vector<int> &slots) {
    if (count_ == 0) return;
    for (int s : slots)
      if (s >= 0 && static_cast<size_t>(s) < by_slot_.size() && by_slot_[s]) take(s);
  }
  void await_all() {
    for (size_t s = 0; count_ > 0 && s < by_slot_.size(); ++s)
      if (by_slot_[s]) take(s);
  }
  // Forgets them (a failed run): their data is never read.
  void clear() {
    by_slot_.clear();
    count_ = 0;
  }

 private:
  void take(size_t s) {
    std::unique_ptr<Event> e = std::move(by_slot_[s]);
    --count_;
    e->wait();
  }
  std::vector<std::unique_ptr<Event>> by_slot_;
  size_t count_ = 0;
};

// The mutable state of one run of a planned Executable: the arena and the tensors viewing it.
// Kept in a pool and reused, so a steady-state run allocates only the outputs it returns.
struct RunState {
  std::vector<std::shared_ptr<Buffer>> arenas;  // one per memory space of the plan
  std::vector<Tensor> slots;  // constants and arena views filled in; inputs/outputs per run
  std::vector<const Tensor *> kernel_inputs;
  std::vector<Tensor *> kernel_outputs;
  std::vector<Tensor> contiguous_inputs;  // copies of non-contiguous caller inputs
  DeviceStreams streams;
  Arrivals arrivals;
};

// Records per-step times into a RunProfile; does nothing (and reads no clock) without one.
class StepTimer {
 public:
  RunProfile *profile() const { return profile_; }
  using Clock = std::chrono::steady_clock;
  explicit StepTimer(RunProfile *profile) : profile_(profile) {
    if (profile_) {
      profile_->steps.clear();
      start_ = Clock::now();
    }
  }
  void begin() {
    if (profile_) step_start_ = Clock::now();
  }
  // `stream`: the step's device queue, waited for so the time is the step's, not its recording.
  void end(size_t step, Stream *stream = nullptr) {
    if (!profile_) return;
    if (stream) stream->synchronize();
    const auto now = Clock::now();
    profile_->steps.push_back({step, micros(step_start_ - start_), micros(now - step_start_)});
  }
  void finish() {
    if (profile_) profile_->total_us = micros(Clock::now() - start_);
  }

 private:
  static double micros(Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
  }
  RunProfile *profile_;
  Clock::time_point start_, step_start_;
};

struct Executable::Impl {
  ThreadPool *pool = nullptr;
  std::vector<ValueInfo> slot_info;
  std::vector<Tensor> initial_slots;      // constants filled in, everything else undefined
  std::vector<TensorType> initial_types;  // the constants' types, by slot (for dynamic runs)
  std::vector<int> input_slots;
  Backend *input_backend = nullptr;  // CompileOptions::input_device (null: host memory)
  std::vector<int> output_slots;
  std::vector<bool> slot_is_output;  // by slot: the slot is one of output_slots
  std::vector<ExecutionStep> steps;
  std::vector<ValueInfo> inputs;
  std::vector<bool> input_rank_known;  // false: a subgraph input of unknown shape (any rank)
  std::vector<ValueInfo> outputs;
  std::vector<StepInfo> step_info;
  MemoryReport memory;

  // Planned executables (every shape static): an arena per memory space, and per slot its arena
  // and offset there (-1 for slots outside them: inputs, constants, graph outputs, which are
  // allocated per run because callers keep them).
  bool planned = false;
  std::vector<int64_t> slot_offset;
  std::vector<int> slot_arena;
  struct Arena {
    Allocator *allocator = nullptr;
    size_t bytes = 0;
  };
  std::vector<Arena> arenas;
  size_t max_memory = 0;  // CompileOptions::max_memory: the budget of every run

  // A graph with input dims known only at run time: its plans per input-shape signature (null
  // for graphs whose plan above serves every run).
  std::shared_ptr<ShapePlanCache> shape_plans;
  // CompileOptions::adaptive: the plans that replace this one when runs disagree with the
  // router's estimates (null when not adaptive).
  std::shared_ptr<AdaptivePlan> adaptive;

  // Runs the plan (a dynamic graph: the plan for these inputs' shapes) on inputs already checked
  // against `inputs`; records the plan's steps into the timer's profile.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs, StepTimer &timer) const;

  // A profiled run's step times, given to the router's cost model (compile/cost_model.h).
  void record_timings(const RunProfile &profile) const;
  std::unique_ptr<RunState> acquire_state() const;
  void release_state(std::unique_ptr<RunState> state) const;
  std::vector<Tensor> run_planned(const std::vector<Tensor> &inputs, StepTimer &timer) const;
  void run_planned_builtin(const ExecutionStep &step, std::vector<Tensor> &slots) const;
  std::vector<Tensor> run_dynamic(const std::vector<Tensor> &inputs, StepTimer &timer) const;

 private:
  mutable std::mutex states_mutex;
  mutable std::vector<std::unique_ptr<RunState>> free_states;
};

}  // namespace lumen
