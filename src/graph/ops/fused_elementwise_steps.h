// The steps of the fused_elementwise op: which ops may be a step and how a step's parameters
// travel in the node's attributes. One catalog for the op's inference, the pass that builds it and
// the kernels (which map each step to a scalar functor: backends/common/fused_elementwise_fns.h).
// The attribute encoding itself is documented at the top of src/graph/ops/fused_elementwise.cc.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lumen/attributes.h"
#include "lumen/error.h"

namespace lumen::fused {

enum class StepKind {
  Relu,
  Sigmoid,
  Tanh,
  Exp,
  Log,
  Sqrt,
  Neg,
  Abs,
  Silu,
  Gelu,
  LeakyRelu,
  Clip,
  HardSigmoid,
  HardSwish,
  Softplus,
  Elu,
  Erf,
  Add,
  Sub,
  Mul,
  Div,
  Maximum,
  Minimum,
};

struct StepInfo {
  std::string_view op;  // the standalone op this step computes
  StepKind kind;
  bool binary;
};

inline constexpr std::array<StepInfo, 23> kStepCatalog = {{
    {"relu", StepKind::Relu, false},
    {"sigmoid", StepKind::Sigmoid, false},
    {"tanh", StepKind::Tanh, false},
    {"exp", StepKind::Exp, false},
    {"log", StepKind::Log, false},
    {"sqrt", StepKind::Sqrt, false},
    {"neg", StepKind::Neg, false},
    {"abs", StepKind::Abs, false},
    {"silu", StepKind::Silu, false},
    {"gelu", StepKind::Gelu, false},
    {"leaky_relu", StepKind::LeakyRelu, false},
    {"clip", StepKind::Clip, false},
    {"hard_sigmoid", StepKind::HardSigmoid, false},
    {"hard_swish", StepKind::HardSwish, false},
    {"softplus", StepKind::Softplus, false},
    {"elu", StepKind::Elu, false},
    {"erf", StepKind::Erf, false},
    {"add", StepKind::Add, true},
    {"sub", StepKind::Sub, true},
    {"mul", StepKind::Mul, true},
    {"div", StepKind::Div, true},
    {"maximum", StepKind::Maximum, true},
    {"minimum", StepKind::Minimum, true},
}};

// The catalog entry of `op`, nullptr when it cannot be a step.
inline const StepInfo *find_step(std::string_view op) {
  for (const StepInfo &info : kStepCatalog)
    if (info.op == op) return &info;
  return nullptr;
}

// Two numbers per step (attribute "params"). Their meaning by op; other ops ignore them:
//   leaky_relu, elu: p0 = alpha        hard_sigmoid: p0 = alpha, p1 = beta
//   clip: p0 = min, p1 = max (+-inf for no bound)
//   gelu: p0 = 0 for the exact erf form, 1 for the tanh approximation
struct StepParams {
  double p0 = 0;
  double p1 = 0;
};

// The parameters of a standalone `kind` node with attributes `attrs` (ONNX defaults when absent).
inline StepParams params_from_attrs(StepKind kind, const Attributes &attrs) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  switch (kind) {
    case StepKind::LeakyRelu:
      return {attrs.get_float("alpha", 0.01), 0};
    case StepKind::Elu:
      return {attrs.get_float("alpha", 1.0), 0};
    case StepKind::HardSigmoid:
      return {attrs.get_float("alpha", 0.2), attrs.get_float("beta", 0.5)};
    case StepKind::Clip:
      return {attrs.get_float("min", -inf), attrs.get_float("max", inf)};
    case StepKind::Gelu:
      return {attrs.get_string("approximate", "none") == "tanh" ? 1.0 : 0.0, 0};
    default:
      return {};
  }
}

// The inverse: the attributes the activation functors read.
inline Attributes attrs_from_params(StepKind kind, StepParams p) {
  switch (kind) {
    case StepKind::LeakyRelu:
    case StepKind::Elu:
      return {{"alpha", p.p0}};
    case StepKind::HardSigmoid:
      return {{"alpha", p.p0}, {"beta", p.p1}};
    case StepKind::Clip:
      return {{"min", p.p0}, {"max", p.p1}};
    case StepKind::Gelu:
      return {{"approximate", std::string(p.p0 == 1.0 ? "tanh" : "none")}};
    default:
      return {};
  }
}

struct Step {
  const StepInfo *info = nullptr;
  int64_t operand = -1;        // input index of the other operand of a binary step, -1 for unary
  bool running_right = false;  // the running value is the right operand: operand OP value
  StepParams params;
};

// Decodes and checks the attributes of a fused_elementwise node with `num_inputs` inputs. Throws
// lumen::Error naming the first problem (the caller adds the node).
inline std::vector<Step> decode_steps(const Attributes &attrs, size_t num_inputs) {
  if (!attrs.has("ops")) fail("attribute ops is required");
  const std::vector<std::string> ops = [&] {
    try {
      return std::get<std::vector<std::string>>(attrs.items().at("ops"));
    } catch (const std::bad_variant_access &) {
      fail("attribute ops must be a list of strings");
    }
  }();
  if (ops.empty()) fail("attribute ops must name at least one step");
  const size_t n = ops.size();
  const std::vector<int64_t> operands = attrs.get_ints("operands", {});
  if (operands.size() != n)
    fail("attribute operands must hold one entry per step (", n, "), got ", operands.size());
  const std::vector<int64_t> right = attrs.get_ints("running_right", std::vector<int64_t>(n, 0));
  if (right.size() != n)
    fail("attribute running_right must hold one entry per step (", n, "), got ", right.size());
  const std::vector<double> params = attrs.get_floats("params", {});
  if (!params.empty() && params.size() != 2 * n)
    fail("attribute params must hold two entries per step (", 2 * n, "), got ", params.size());

  std::vector<Step> steps(n);
  for (size_t i = 0; i < n; ++i) {
    Step &s = steps[i];
    s.info = find_step(ops[i]);
    if (!s.info) fail("step ", i, ": '", ops[i], "' is not an element-wise op that can be fused");
    s.operand = operands[i];
    if (s.info->binary && (s.operand < 0 || s.operand >= int64_t(num_inputs)))
      fail("step ", i, " (", ops[i], "): operand ", s.operand, " is not an input index (",
           num_inputs, " inputs)");
    if (!s.info->binary && s.operand != -1)
      fail("step ", i, " (", ops[i], ") is unary, so its operand must be -1, got ", s.operand);
    if (right[i] != 0 && right[i] != 1)
      fail("step ", i, " (", ops[i], "): running_right must be 0 or 1, got ", right[i]);
    if (right[i] == 1 && !s.info->binary)
      fail("step ", i, " (", ops[i], ") is unary, so running_right must be 0");
    s.running_right = right[i] == 1;
    s.params = params.empty() ? params_from_attrs(s.info->kind, Attributes{})
                              : StepParams{params[2 * i], params[2 * i + 1]};
    if (s.info->kind == StepKind::Gelu && s.params.p0 != 0.0 && s.params.p0 != 1.0)
      fail("step ", i, " (gelu): p0 must be 0 (erf) or 1 (tanh), got ", s.params.p0);
    if (s.info->kind == StepKind::Clip && (std::isnan(s.params.p0) || std::isnan(s.params.p1)))
      fail("step ", i, " (clip): min and max must not be NaN");
  }
  return steps;
}

// The attributes encoding `steps` (the inverse of decode_steps).
inline Attributes encode_steps(const std::vector<Step> &steps) {
  std::vector<std::string> ops;
  std::vector<int64_t> operands, right;
  std::vector<double> params;
  for (const Step &s : steps) {
    ops.emplace_back(s.info->op);
    operands.push_back(s.operand);
    right.push_back(s.running_right ? 1 : 0);
    params.push_back(s.params.p0);
    params.push_back(s.params.p1);
  }
  return {{"ops", ops}, {"operands", operands}, {"running_right", right}, {"params", params}};
}

}  // namespace lumen::fused
