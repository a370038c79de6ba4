// The activations of ONNX RNN, GRU and LSTM ("activations", "activation_alpha", "activation_beta"),
// parsed once per kernel call into callables, for every backend's recurrent kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include "core/kernel.h"

namespace lumen {

// One activation: its kind and alpha / beta (ONNX's defaults where the node gives none).
struct RecurrentActivation {
  enum class Kind {
    Tanh,
    Sigmoid,
    Relu,
    Affine,
    LeakyRelu,
    ThresholdedRelu,
    ScaledTanh,
    HardSigmoid,
    Elu,
    Softsign,
    Softplus
  };
  Kind kind = Kind::Tanh;
  double alpha = 0, beta = 0;

  template <class T>
  T operator()(T x) const {
    const T a = T(alpha), b = T(beta);
    switch (kind) {
      case Kind::Tanh:
        return std::tanh(x);
      case Kind::Sigmoid:
        return T(1) / (T(1) + std::exp(-x));
      case Kind::Relu:
        return std::max(x, T(0));
      case Kind::Affine:
        return a * x + b;
      case Kind::LeakyRelu:
        return x >= 0 ? x : a * x;
      case Kind::ThresholdedRelu:
        return x > a ? x : T(0);
      case Kind::ScaledTanh:
        return a * std::tanh(b * x);
      case Kind::HardSigmoid:
        return std::clamp(a * x + b, T(0), T(1));
      case Kind::Elu:
        return x >= 0 ? x : a * (std::exp(x) - T(1));
      case Kind::Softsign:
        return x / (T(1) + std::abs(x));
      case Kind::Softplus:
        return std::log1p(std::exp(x));
    }
    return x;
  }
};

// The kind of `name` with its default alpha / beta and which of them it takes; false when ONNX
// has no such activation.
inline bool recurrent_activation_kind(const std::string &name, RecurrentActivation &a,
                                      bool &uses_alpha, bool &uses_beta) {
  using K = RecurrentActivation::Kind;
  uses_alpha = uses_beta = false;
  a.alpha = a.beta = 0;
  if (name == "Tanh")
    a.kind = K::Tanh;
  else if (name == "Sigmoid")
    a.kind = K::Sigmoid;
  else if (name == "Relu")
    a.kind = K::Relu;
  else if (name == "Softsign")
    a.kind = K::Softsign;
  else if (name == "Softplus")
    a.kind = K::Softplus;
  else if (name == "LeakyRelu")
    a.kind = K::LeakyRelu, a.alpha = 0.01, uses_alpha = true;
  else if (name == "ThresholdedRelu")
    a.kind = K::ThresholdedRelu, a.alpha = 1.0, uses_alpha = true;
  else if (name == "Elu")
    a.kind = K::Elu, a.alpha = 1.0, uses_alpha = true;
  else if (name == "Affine")
    a.kind = K::Affine, a.alpha = 1.0, uses_alpha = uses_beta = true;
  else if (name == "ScaledTanh")
    a.kind = K::ScaledTanh, a.alpha = 1.0, uses_alpha = uses_beta = true;
  else if (name == "HardSigmoid")
    a.kind = K::HardSigmoid, a.alpha = 0.2, a.beta = 0.5, uses_alpha = uses_beta = true;
  else
    return false;
  return true;
}

// The activations of every direction (`defaults.size()` each, in order), from the attributes or
// ONNX's defaults; alpha and beta values are taken in order by the activations that use them.
inline std::vector<RecurrentActivation> recurrent_activations(
    const KernelContext &ctx, int64_t dirs, const std::vector<std::string> &defaults) {
  std::vector<std::string> names;
  if (ctx.attrs.has("activations")) {
    const auto &v = ctx.attrs.items().at("activations");
    if (const auto *list = std::get_if<std::vector<std::string>>(&v))
      names = *list;
    else if (const auto *one = std::get_if<std::string>(&v))
      names = {*one};
    else
      ctx.fail("attribute 'activations' must be a list of strings");
  }
  const size_t per_dir = defaults.size();
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per_dir * static_cast<size_t>(dirs) && names.size() != per_dir)
    ctx.fail("expected ", per_dir * static_cast<size_t>(dirs), " activations, got ", names.size());
  const auto alphas = ctx.attrs.get_floats("activation_alpha", {});
  const auto betas = ctx.attrs.get_floats("activation_beta", {});
  size_t ia = 0, ib = 0;
  std::vector<RecurrentActivation> out;
  for (const auto &name : names) {
    RecurrentActivation a;
    bool ua = false, ub = false;
    if (!recurrent_activation_kind(name, a, ua, ub))
      ctx.fail("activation '", name, "' is not supported");
    if (ua && ia < alphas.size()) a.alpha = alphas[ia++];
    if (ub && ib < betas.size()) a.beta = betas[ib++];
    out.push_back(a);
  }
  // Given for one direction only: both directions use them (with the same alpha / beta).
  if (dirs == 2 && out.size() == per_dir) {
    const std::vector<RecurrentActivation> first = out;
    out.insert(out.end(), first.begin(), first.end());
  }
  return out;
}

}  // namespace lumen
