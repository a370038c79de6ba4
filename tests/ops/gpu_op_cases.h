// One table of op cases for the GPU backends' kernels (Vulkan, CUDA), each run on the backend and
// on the reference backend: a backend's test runs the cases of the ops it registers and checks
// that every (op, dtype) it registers has one. Tolerances: 1e-5 relative + 1e-5 absolute for
// element-wise and movement ops, 1e-4 for reductions over rows (softmax, layer_norm: other
// summation orders), 1e-4 relative + 1e-3 absolute for MatMul/Gemm/conv over up to ~600 terms.
#pragma once

#include <string>
#include <vector>

#include "lumen/lumen.h"

namespace lumen::testing {

struct Case {
  std::string op;
  std::vector<Tensor> inputs;
  Attributes attrs = {};
  double rtol = 1e-5, atol = 1e-5;
};

inline Tensor ints(const Shape &shape, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(shape, v);
}
inline Tensor scalar(float v) {
  return Tensor::from_vector<float>({}, {v});
}

std::vector<Case> gpu_op_cases();
// Into `g`: input x [8, 32] -> gemm (bias) -> relu -> matmul -> softmax, the output: a small graph
// every op of which a GPU backend runs (pinned-graph tests).
void add_small_mlp(Graph &g);
// Whether `op` only moves elements (its cases run again on integer data).
bool is_movement(const std::string &op);
// Float values times 1000, rounded, as int32 or int64 (distinct values, so a misplaced word shows).
Tensor as_ints(const Tensor &t, DType dtype);

// Runs every case of an (op, dtype) that `backend` registers, against the reference backend (and
// the float32 cases of movement ops again on `movement_dtypes` data, as_ints); `skip(case)`
// leaves out cases the backend's kernel limits refuse. Fails where a registered (op, dtype) has
// no case.
void expect_kernels_match_reference(const std::string &backend,
                                    const std::vector<DType> &movement_dtypes,
                                    bool (*skip)(const Case &) = nullptr);

}  // namespace lumen::testing
