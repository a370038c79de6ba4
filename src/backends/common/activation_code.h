// The activations the GPU kernels apply by code (Vulkan's shaders/activations.glsl and CUDA's
// kernels/activations.cuh number them the same way): the unary ops, the steps of
// fused_elementwise and the epilogues of the fused ops.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "lumen/attributes.h"

namespace lumen {

enum ActivationCode : uint32_t {
  kRelu,
  kLeakyRelu,
  kSigmoid,
  kTanh,
  kGelu,
  kGeluTanh,
  kSilu,
  kElu,
  kSoftplus,
  kHardSigmoid,
  kHardSwish,
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kClip,
  kErf,
  kNoActivation = 31,  // the value passes through (an epilogue without an activation)
};

struct Activation {
  uint32_t code = kNoActivation;
  float alpha = 0, beta = 0;  // its parameters (clip: min and max)
};

// The activation op `op` with its ONNX attributes; nullopt when the GPU kernels have no such code.
std::optional<Activation> activation_of(std::string_view op, const Attributes &attrs);

// A fused op's epilogue activation: attribute "activation" with its parameters prefixed
// "activation_" (graph/ops/epilogue_activations.h); kNoActivation when it has none.
Activation epilogue_activation(const Attributes &fused);

}  // namespace lumen
