// Lumen's public C++ API: Runtime, Graph, Executable, Tensor.
//
//   lumen::Runtime rt;
//   lumen::Graph graph;
//   auto *x = graph.add_input("input", {1, 10});
//   auto *y = graph.add_op("matmul", {x, graph.add_weight("weight", {10, 5})});
//   graph.mark_output(y);
//   auto *exe = graph.compile(&rt);         // owned by rt
//   auto outputs = exe->execute({rt.alloc({1, 10})});
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lumen/attributes.h"
#include "lumen/dtype.h"
#include "lumen/error.h"
#include "lumen/graph.h"
#include "lumen/memory_budget.h"
#include "lumen/ops.h"
#include "lumen/shape.h"
#include "lumen/tensor.h"

namespace lumen {

class ThreadPool;

struct RuntimeOptions {
  int num_threads = 0;  // 0: all cores
  // "auto": the router places each node (compile/place.h); a backend's name pins every node to
  // it; a comma-separated list ("cpu,vulkan") lets the router choose among those only. Empty:
  // $LUMEN_BACKEND if set, else "auto".
  std::string backend;
};

// `t` in the memory of the backend named `backend` ("cpu": host memory, "vulkan": a Vulkan buffer):
// `t` itself where it is there already, else a copy. Feeds a plan compiled with
// CompileOptions::input_device, and reads outputs returned in a device's memory.
Tensor to_device(const Tensor &t, std::string_view backend);

// The execution context: thread pool, backend choice, and owner of compiled Executables.
// Thread-safe; destroying it destroys the Executables it owns.
class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  // A zero-filled host tensor.
  Tensor alloc(const Shape &shape, DType dtype = DType::Float32) const;
  const RuntimeOptions &options() const { return options_; }
  int num_threads() const;
  ThreadPool &thread_pool() const;

  // Takes ownership of `executable` and returns it (what Graph::compile does).
  Executable *adopt(std::unique_ptr<Executable> executable);
  // Destroys an Executable this runtime owns; no execute() on it may be running.
  void release(const Executable *executable);

 private:
  struct Impl;
  RuntimeOptions options_;
  std::unique_ptr<Impl> impl_;
};

struct ValueInfo {
  std::string name;
  DType dtype;
  Shape shape;  // dims may be kUnknownDim
  // Sequence and Optional: the items' type (Container::element); empty for tensors.
  std::vector<DType> element = {};
};

// Where and how one node runs.
struct StepInfo {
  std::string node;
  std::string op;
  std::string backend;
  std::string dtype;       // the dtype that keyed the kernel choice
  std::string attributes;  // the node's attributes, "{activation=relu, group=1}"
  // The algorithm the kernel chose for this step at compile time, and why; empty where the
  // kernel has one algorithm (or decides per call).
  std::string algorithm;
  // Why the step runs on its backend, in one line ("cpu: the only device placed automatically
  // with a float32 kernel"); see src/compile/place.h.
  std::string placement;
  // As shape inference left them at compile time (dims may be kUnknownDim; an absent optional
  // input has rank 0), so a profile can say which conv or matmul a slow step is.
  std::vector<Shape> input_shapes, output_shapes;
  // Where devices were weighed: the estimated microseconds on each candidate backend, and of the
  // copies into this step's memory that the chosen placement pays. Empty and 0 otherwise.
  std::vector<std::pair<std::string, double>> estimates_us = {};
  double copies_us = 0;
};

// The memory plan of one memory space ("host", "cuda:0"...). Bytes of intermediate values only:
// graph inputs, outputs and constants are not in the arena.
struct MemorySpaceReport {
  std::string space;
  size_t naive_bytes = 0;        // every intermediate in its own buffer
  size_t planned_bytes = 0;      // the arena
  size_t lower_bound_bytes = 0;  // the most bytes live at any one step
  size_t num_values = 0;
  size_t in_place = 0;      // element-wise steps writing over their dying input
  size_t views = 0;         // reshape-like steps whose output is their input's memory (no copy)
  size_t concat_parts = 0;  // values written straight into the concat that joins them (no copy)
};

struct MemoryReport {
  // False when some shapes are known only at run time: intermediates then come from the caching
  // allocator and are freed after their last use.
  bool planned = false;
  std::vector<MemorySpaceReport> spaces;
  std::string to_string() const;
};

// Wall-clock time of each kernel call of one execute(), for profiles. Steps are indices into
// Executable::steps(); reshape-like steps that run no kernel (views in the arena) are left out.
struct StepTiming {
  size_t step;
  double start_us;  // from the start of execute()
  double duration_us;
};

struct RunProfile {
  std::vector<StepTiming> steps;
  // The steps of the plan that ran, which StepTiming::step indexes: Executable::steps(), or for a
  // graph with dims known only at run time the plan made for these input shapes (real shapes).
  std::vector<StepInfo> plan_steps;
  double total_us = 0;  // the whole execute(), input checks included
};

// A timeout for the runs of this thread while it lives (lumen's CompiledModel.run(timeout=)): an
// execute() stops between steps (and between a loop's iterations) once `seconds` have passed
// since the scope began, with a lumen::Error naming the node it stopped before. Cooperative: the
// step running when time is up finishes first. 0 or less: no timeout.
class RunTimeoutScope {
 public:
  explicit RunTimeoutScope(double seconds);
  ~RunTimeoutScope();
  RunTimeoutScope(const RunTimeoutScope &) = delete;
  RunTimeoutScope &operator=(const RunTimeoutScope &) = delete;

 private:
  double previous_seconds_;
  int64_t previous_deadline_ns_;
};

// A compiled graph. Immutable after compilation (an adaptive one may swap its plan between runs,
// a bounded number of times), so execute() may be called from several threads at once. With
// static shapes, intermediates live at planned offsets in an arena; each concurrent execute()
// takes its own arena from a pool the Executable keeps, so a steady-state run allocates only the
// output tensors it returns.
class Executable {
 public:
  struct Impl;
  explicit Executable(std::unique_ptr<Impl> impl);
  ~Executable();

  // Inputs in the order of inputs(). Checks count, dtype and shape of each, naming the input and
  // what was expected. Returns the outputs in the order of outputs(), in host memory or where
  // CompileOptions::output_device says. Inputs may be in any memory: those not where the plan
  // reads them (CompileOptions::input_device) are copied there first.
  std::vector<Tensor> execute(const std::vector<Tensor> &inputs) const;
  // The same, recording the time of every step into `profile` (cleared first) when non-null.
  std::vector<Tensor> execute(const std::vector<Tensor> &inputs, RunProfile *profile) const;
  // Inputs by name; every input must be given exactly once.
  std::vector<Tensor> execute(const std::map<std::string, Tensor> &feeds,
                              RunProfile *profile = nullptr) const;

  const std::vector<ValueInfo> &inputs() const;
  const std::vector<ValueInfo> &outputs() const;
  const std::vector<StepInfo> &steps() const;
  const MemoryReport &memory() const;
  std::string summary() const;
  // Compiled with CompileOptions::adaptive: one line per time the plan was redone because runs
  // disagreed with the router's estimates ("replan 1: 2 steps off the estimates (...); 3 steps
  // moved"). Empty otherwise.
  std::vector<std::string> replans() const;

 private:
  const Impl &current_plan() const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lumen
