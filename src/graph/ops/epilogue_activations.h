// The activations the fused ops (fused_conv, fused_gemm, fused_matmul, ...) can apply in their
// epilogue, and how a fused node carries them: the "activation" attribute names one, its own
// attributes follow prefixed "activation_". Read by the ops' inference, the fusing passes and the
// kernels (backends/common/epilogue.h), so all of them agree on one list.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "graph/ops/attribute_prefix.h"
#include "lumen/attributes.h"

namespace lumen {

// An activation a fused op can apply: its op name (also the value of the "activation" attribute)
// and the names of its own attributes, which the fused node carries as "activation_<name>".
struct EpilogueActivation {
  std::string_view name;
  std::array<std::string_view, 2> params;  // "" for unused slots
};

inline constexpr std::array<EpilogueActivation, 9> kEpilogueActivations = {{
    {"relu", {}},
    {"leaky_relu", {"alpha"}},
    {"clip", {"min", "max"}},
    {"sigmoid", {}},
    {"silu", {}},
    {"tanh", {}},
    {"gelu", {"approximate"}},
    {"hard_swish", {}},
    {"hard_sigmoid", {"alpha", "beta"}},
}};

inline constexpr std::string_view kActivationPrefix = "activation_";

// nullptr when `name` is not an activation the fused ops can apply.
inline const EpilogueActivation *find_epilogue_activation(std::string_view name) {
  for (const EpilogueActivation &a : kEpilogueActivations)
    if (a.name == name) return &a;
  return nullptr;
}

inline bool takes_param(const EpilogueActivation &activation, std::string_view param) {
  return !param.empty() && std::find(activation.params.begin(), activation.params.end(), param) !=
                               activation.params.end();
}

// "relu, leaky_relu, ..." for error messages.
inline std::string epilogue_activation_names() {
  std::string out;
  for (const EpilogueActivation &a : kEpilogueActivations) {
    if (!out.empty()) out += ", ";
    out += a.name;
  }
  return out;
}

// The activation's own attributes, un-prefixed: {activation_alpha=0.1} -> {alpha=0.1}.
inline Attributes activation_attributes(const Attributes &fused) {
  return unprefixed_attributes(fused, kActivationPrefix);
}

}  // namespace lumen
