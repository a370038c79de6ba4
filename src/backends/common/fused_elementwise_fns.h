// The scalar function each fused_elementwise step applies (the steps themselves:
// graph/ops/fused_elementwise_steps.h), shared by the reference and CPU kernels so both compute
// the same thing.
#pragma once

#include <cmath>
#include <variant>

#include "backends/common/activation_functors.h"
#include "backends/common/binary_functors.h"
#include "graph/ops/fused_elementwise_steps.h"
#include "lumen/attributes.h"
#include "lumen/error.h"

namespace lumen::fused {

// erf is a math op without an activation functor; this one has the same shape as those.
template <class T>
struct Erf {
  explicit Erf(const Attributes &) {}
  T operator()(T x) const { return std::erf(x); }  // as the reference erf op, to the bit
};

// The scalar function of one step: an activation functor (called f(x)) or a binary functor
// (called f(a, b)); kernels tell them apart with std::is_invocable.
template <class T>
using StepFn = std::variant<act::Relu<T>, act::Sigmoid<T>, act::Tanh<T>, act::Exp<T>, act::Log<T>,
                            act::Sqrt<T>, act::Neg<T>, act::Abs<T>, act::Silu<T>, act::Gelu<T>,
                            act::LeakyRelu<T>, act::Clip<T>, act::HardSigmoid<T>, act::HardSwish<T>,
                            act::Softplus<T>, act::Elu<T>, Erf<T>, bin::Add, bin::Sub, bin::Mul,
                            bin::Div, bin::Maximum, bin::Minimum>;

template <class T>
StepFn<T> make_step_fn(const Step &step) {
  const Attributes a = attrs_from_params(step.info->kind, step.params);
  switch (step.info->kind) {
    case StepKind::Relu:
      return act::Relu<T>(a);
    case StepKind::Sigmoid:
      return act::Sigmoid<T>(a);
    case StepKind::Tanh:
      return act::Tanh<T>(a);
    case StepKind::Exp:
      return act::Exp<T>(a);
    case StepKind::Log:
      return act::Log<T>(a);
    case StepKind::Sqrt:
      return act::Sqrt<T>(a);
    case StepKind::Neg:
      return act::Neg<T>(a);
    case StepKind::Abs:
      return act::Abs<T>(a);
    case StepKind::Silu:
      return act::Silu<T>(a);
    case StepKind::Gelu:
      return act::Gelu<T>(a);
    case StepKind::LeakyRelu:
      return act::LeakyRelu<T>(a);
    case StepKind::Clip:
      return act::Clip<T>(a);
    case StepKind::HardSigmoid:
      return act::HardSigmoid<T>(a);
    case StepKind::HardSwish:
      return act::HardSwish<T>(a);
    case StepKind::Softplus:
      return act::Softplus<T>(a);
    case StepKind::Elu:
      return act::Elu<T>(a);
    case StepKind::Erf:
      return Erf<T>(a);
    case StepKind::Add:
      return bin::Add{};
    case StepKind::Sub:
      return bin::Sub{};
    case StepKind::Mul:
      return bin::Mul{};
    case StepKind::Div:
      return bin::Div{};
    case StepKind::Maximum:
      return bin::Maximum{};
    case StepKind::Minimum:
      return bin::Minimum{};
  }
  fail("unknown fused_elementwise step");
}

}  // namespace lumen::fused
