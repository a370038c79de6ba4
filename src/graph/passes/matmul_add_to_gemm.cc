// matmul -> add(bias), where the matmul's output feeds only the add:
//   - A and B 2-D, the bias broadcasting to [M, N] the way Gemm's C does ([N], [1, N], [M, N],
//     [M, 1], [1], scalar): gemm(A, B, bias);
//   - otherwise (batched operands, e.g. transformer activations [batch, seq, hidden] @ [hidden, N])
//     with a 1-D bias [N] along the last dim: fused_matmul(A, B, bias), no activation yet.
// The bias may be any value (not only a constant): both ops take it as a run-time input.
#include "graph/passes/pass.h"
#include "graph/passes/pattern.h"

namespace lumen {
namespace {

// Whether a dim of the bias provably broadcasts to an output dim.
bool broadcasts_to(int64_t bias_dim, int64_t out_dim) {
  return bias_dim == 1 || (bias_dim != kUnknownDim && bias_dim == out_dim);
}

// Gemm's C: rank <= 2, each dim 1 or equal to the output's ([M, N]).
bool fits_gemm_c(const Value *bias, const Shape &out) {
  const Shape &c = bias->shape();
  if (c.rank() > 2) return false;
  for (size_t i = 0; i < c.rank(); ++i)
    if (!broadcasts_to(c[i], out[2 - c.rank() + i])) return false;
  return true;
}

bool is_bias_along_last_dim(const Value *bias, const Shape &out) {
  const Shape &b = bias->shape();
  return out.rank() >= 1 && b.rank() == 1 && b[0] != kUnknownDim && b[0] == out[out.rank() - 1];
}

struct Match {
  Node *matmul = nullptr;
  Value *bias = nullptr;
  const char *op = nullptr;  // "gemm" or "fused_matmul"
};

Match match(const Graph &graph, Node *add) {
  for (size_t i = 0; i < 2; ++i) {
    Node *matmul = producer_if(add->input(i), "matmul");
    Value *bias = add->input(1 - i);
    if (!matmul || !has_single_use(graph, matmul->output())) continue;
    // Dims that wait for run time are unknown (kUnknownDim): only a bias dim of 1 broadcasts.
    const auto a = known_shape(matmul->input(0)), b = known_shape(matmul->input(1)),
               y = known_shape(matmul->output());
    if (!a || !b || !y || !bias->has_shape()) continue;
    const DType dtype = matmul->output()->dtype();
    if (bias->dtype() != dtype || add->output()->dtype() != dtype) continue;
    if (a->dims.rank() == 2 && b->dims.rank() == 2) {
      if (fits_gemm_c(bias, y->dims)) return {matmul, bias, "gemm"};
      continue;
    }
    // fused_matmul: float32/float64 only, and B must give the last dim (not a 1-D vector).
    const bool float_dtype = dtype == DType::Float32 || dtype == DType::Float64;
    if (float_dtype && b->dims.rank() >= 2 && a->dims.rank() >= 2 &&
        is_bias_along_last_dim(bias, y->dims))
      return {matmul, bias, "fused_matmul"};
  }
  return {};
}

class MatmulAddToGemm final : public Pass {
 public:
  std::string_view name() const override { return "matmul_add_to_gemm"; }

  bool run(Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (Node *add : graph.topological_order()) {
      if (add->op() != "add") continue;
      const Match m = match(graph, add);
      if (!m.matmul) continue;
      Value *fused = graph.add_op(m.op, {m.matmul->input(0), m.matmul->input(1), m.bias}, {},
                                  graph.fresh_name(m.matmul->name()));
      changed |= replace_pair(graph, ctx, m.matmul, add, fused);
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_add_to_gemm() {
  return std::make_unique<MatmulAddToGemm>();
}

}  // namespace lumen
