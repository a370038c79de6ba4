// Runs one op: type inference, backend and kernel choice, output allocation, kernel call. Shared by
// the eager API and the executor so the two can never disagree.
#pragma once

#include <string_view>
#include <vector>

#include "core/backend.h"
#include "graph/op_schema.h"

namespace lumen {

// The dtype that keys kernel lookup: that of input 0.
DType kernel_dtype(const std::vector<const TensorType *> &inputs);

// For ops whose kernels size their outputs: inference run for its checks only, without the input
// values (so it stops where the values would be needed, before doing the op's work).
void check_inputs(const OpSchema &schema, InferContext ctx);

// Runs the kernel with inputs already checked; allocates and returns the outputs of `types`, or
// with `types` null (OpSchema::kernel_sizes_outputs) `num_outputs` outputs the kernel allocates.
// Outputs flagged in `unused` (OpSchema::optional_outputs; shorter than the outputs or empty: the
// rest are used) are not made: the kernel gets nullptr.
// Inputs: nullptr (or an undefined tensor) for an omitted optional input; non-contiguous ones are
// copied contiguous for the kernel. `stream`: the device's queue the kernel records on (nullptr:
// the kernel runs to completion before returning); `host_inputs`: KernelContext::host_inputs.
std::vector<Tensor> run_kernel(KernelFn kernel, Backend &backend,
                               const std::vector<const Tensor *> &inputs,
                               const std::vector<TensorType> *types, size_t num_outputs,
                               const Attributes &attrs, ThreadPool &pool, std::string_view op,
                               std::string_view node, const void *prepared = nullptr,
                               const std::vector<bool> &unused = {}, Stream *stream = nullptr,
                               std::vector<const Tensor *> host_inputs = {});

}  // namespace lumen
