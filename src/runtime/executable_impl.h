// What a compiled graph is made of: value slots and a list of kernel calls over them. Built by the
// compiler, read-only afterwards, so executions can share it across threads.
#pragma once

#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/op_schema.h"
#include "lumen/lumen.h"

namespace lumen {

struct ExecutionStep {
  const OpSchema *schema;
  std::string node;
  Attributes attrs;
  Backend *backend;
  KernelFn kernel;
  std::vector<int> inputs;   // slot per input, -1 for an omitted optional input
  std::vector<int> outputs;  // slot per output
  std::vector<int> release;  // slots whose last use is this step (freed right after it)
};

struct Executable::Impl {
  ThreadPool *pool = nullptr;
  std::vector<ValueInfo> slot_info;
  std::vector<Tensor> initial_slots;  // constants filled in, everything else undefined
  std::vector<int> input_slots;
  std::vector<int> output_slots;
  std::vector<ExecutionStep> steps;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<StepInfo> step_info;
  MemoryReport memory;
};

}  // namespace lumen
