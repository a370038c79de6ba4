// Eager execution of single ops, outside any graph: the path behind lumen.conv2d & co. in Python.
#pragma once

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

// Names of the registered ops and of the backends built into this library.
std::vector<std::string> list_ops();
std::vector<std::string> list_backends();

}  // namespace lumen
