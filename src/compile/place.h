// The place stage of compiling (shared/ARCHITECTURE.md: lower -> place -> insert copies -> plan
// -> freeze): which backend runs each step, and a one-line reason that `lumen inspect --routing`
// and CompiledModel.routing() show.
//
// A backend the caller pins runs every step (compiling fails listing the steps it has no kernel
// for). Otherwise each step's candidates are the backends placed automatically that have its
// kernel (never the reference backend). Where some step has candidates on more than one device,
// placement minimizes the estimated time of the whole graph, copies between memory spaces
// included (compile/cost_model.h): a dynamic program over the topological order that keeps, for
// each device, the cheapest assignment of the steps so far whose last weighed step runs there,
// with the copies that assignment pays (a value is copied to a space once, however many steps
// read it there). So a small step between two steps on a fast device stays with them when moving
// its input costs more than it saves. With one candidate everywhere nothing is weighed or
// measured.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "graph/op_work.h"

namespace lumen {

class ThreadPool;

struct Placement {
  Backend *backend = nullptr;  // nullptr: a step the executor runs on host memory
  std::string reason;          // "cpu: 0.41 ms vs sim 0.20 ms + copy 0.30 ms"
  // Estimated microseconds on each candidate (empty where nothing was weighed), and of the copies
  // into this step's memory space that the chosen placement pays before it.
  std::vector<std::pair<std::string, double>> estimates_us;
  double copies_us = 0;
};

// One step to place, in topological order: its op and kernel dtype, its work, and the values it
// reads and writes (ids into the values list; -1 for an omitted input).
struct PlacementStep {
  std::string op, node;
  DType dtype = DType::Float32;
  OpWork work;
  std::vector<int> inputs, outputs;
  bool executor = false;  // control flow and containers: run by the executor, in host memory
  // What a backend's kernel limits look at (NodeQuery): the node's attributes (nullptr: none;
  // they outlive placement), its input types and which outputs are read.
  const Attributes *attrs = nullptr;
  std::vector<NodeQuery::Input> input_types;
  std::vector<bool> outputs_used;
};

struct PlacementValue {
  double bytes = 0;
  bool constant = false;      // uploaded at compile time where it is read: no copy at run time
  bool graph_input = false;   // given by the caller, in IoSpaces::inputs
  bool graph_output = false;  // returned to the caller, in IoSpaces::outputs
  bool objects = false;       // a sequence or optional: host objects, always in host memory
};

// Where the caller's tensors are (CompileOptions::input_device / output_device): the memory of
// the graph inputs it gives and of the outputs it gets back, each a backend standing for its space.
struct IoSpaces {
  Backend *inputs = nullptr;  // null: host memory
  Backend *outputs = nullptr;
  // The space a graph input / output of value `v` is in (sequences and optionals: host memory).
  Backend &of_input(const PlacementValue &v) const;
  Backend &of_output(const PlacementValue &v) const;
};

// Places every step, graph inputs and outputs where `io` says. `pinned` names a backend or is
// empty ("auto" means empty). Throws naming the steps no backend may run.
std::vector<Placement> place_steps(const std::vector<PlacementStep> &steps,
                                   const std::vector<PlacementValue> &values,
                                   std::string_view pinned, ThreadPool &pool,
                                   const IoSpaces &io = {});

// The backend automatic placement picks for `op` with kernel dtype `dtype` where nothing is
// weighed (eager calls, the lower stage): the highest-priority one that may be placed
// automatically and has a kernel; nullptr when none has.
Backend *automatic_backend(std::string_view op, DType dtype);

// Places one step by that rule (eager calls); `pinned` names a backend or is empty. Throws naming
// the op, node and dtype where no backend may run it.
Placement place_node(std::string_view op, DType dtype, std::string_view pinned,
                     std::string_view node);

}  // namespace lumen
