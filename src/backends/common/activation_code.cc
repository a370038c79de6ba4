#include "backends/common/activation_code.h"

#include <array>
#include <limits>
#include <utility>

#include "graph/ops/epilogue_activations.h"
#include "lumen/error.h"

namespace lumen {

std::optional<Activation> activation_of(std::string_view op, const Attributes &attrs) {
  static constexpr std::array<std::pair<std::string_view, ActivationCode>, 18> kCodes = {{
      {"relu", kRelu},
      {"leaky_relu", kLeakyRelu},
      {"sigmoid", kSigmoid},
      {"tanh", kTanh},
      {"gelu", kGelu},
      {"silu", kSilu},
      {"elu", kElu},
      {"softplus", kSoftplus},
      {"hard_sigmoid", kHardSigmoid},
      {"hard_swish", kHardSwish},
      {"exp", kExp},
      {"log", kLog},
      {"sqrt", kSqrt},
      {"neg", kNeg},
      {"abs", kAbs},
      {"clip", kClip},
      {"erf", kErf},
  }};
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (const auto &[name, code] : kCodes) {
    if (name != op) continue;
    Activation a{.code = code};
    switch (code) {
      case kLeakyRelu:
        a.alpha = static_cast<float>(attrs.get_float("alpha", 0.01));
        break;
      case kElu:
        a.alpha = static_cast<float>(attrs.get_float("alpha", 1.0));
        break;
      case kHardSigmoid:
        a.alpha = static_cast<float>(attrs.get_float("alpha", 0.2));
        a.beta = static_cast<float>(attrs.get_float("beta", 0.5));
        break;
      case kClip:
        a.alpha = static_cast<float>(attrs.get_float("min", -kInf));
        a.beta = static_cast<float>(attrs.get_float("max", kInf));
        break;
      case kGelu:
        if (attrs.get_string("approximate", "none") == "tanh") a.code = kGeluTanh;
        break;
      default:
        break;
    }
    return a;
  }
  return std::nullopt;
}

Activation epilogue_activation(const Attributes &fused) {
  const std::string name = fused.get_string("activation", "");
  if (name.empty()) return {};
  const std::optional<Activation> a = activation_of(name, activation_attributes(fused));
  if (!a) fail("epilogue activation '", name, "' has no GPU code");
  return *a;
}

}  // namespace lumen
