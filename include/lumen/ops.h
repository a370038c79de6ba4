// Eager execution of single ops, outside any graph: the path behind lumen.conv2d & co. in Python.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lumen/attributes.h"
#include "lumen/tensor.h"

namespace lumen {

// Runs `op` on `inputs` (an undefined Tensor stands for an omitted optional input) and returns its
// outputs. `backend` names the backend ("cpu", "reference"); empty picks the preferred backend that
// has a kernel. Non-contiguous inputs are copied to contiguous memory first. Uses the process-wide
// thread pool. Throws lumen::Error naming the op, the shapes and what was expected.
std::vector<Tensor> call_op(const std::string &op, const std::vector<Tensor> &inputs,
                            const Attributes &attrs = {}, const std::string &backend = "");

// For OptimizeOptions::target_supports: whether any backend of `backends` (one name or a
// comma-separated list; empty or "auto": every op) has a kernel for an op. Throws for unknown
// names.
std::function<bool(const std::string &op)> ops_supported_by(const std::string &backends);

// A backend built into this library and whether its device can be used here.
struct BackendInfo {
  std::string name;        // "vulkan"
  std::string device;      // its memory space: "cpu", "vulkan:0"
  bool available = false;  // false: no device or driver here (see why_not)
  std::string
      description;  // the device model and driver ("llvmpipe (LLVM 15.0.6, 256 bits) / ...")
  std::string why_not;
  bool placed_automatically = false;  // false for the reference backend (a test oracle)
  // What it counts as it runs (Vulkan: "batches_recorded", "batches_replayed": command buffers
  // recorded, and submitted again instead of recorded).
  std::map<std::string, uint64_t> counters;
};
std::vector<BackendInfo> describe_backends();

// Names of the registered ops and of the backends built into this library.
std::vector<std::string> list_ops();
std::vector<std::string> list_backends();

}  // namespace lumen
