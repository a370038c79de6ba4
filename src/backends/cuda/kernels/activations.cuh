// The activations by code, on the device: the numbering of backends/common/activation_code.h
// (Vulkan's shaders/activations.glsl applies the same formulas); and the binary ops.
#pragma once

#include "backends/common/activation_code.h"
#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {

__device__ inline float activate(unsigned code, float x, float alpha, float beta) {
  switch (code) {
    case kRelu:
      return x < 0.f ? 0.f : x;  // NaN passes
    case kLeakyRelu:
      return x < 0.f ? alpha * x : x;
    case kSigmoid:
      return 1.f / (1.f + expf(-x));
    case kTanh:
      return tanhf(x);
    case kGelu:
      return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case kGeluTanh:
      return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case kSilu:
      return x / (1.f + expf(-x));
    case kElu:
      return x < 0.f ? alpha * (expf(x) - 1.f) : x;
    case kSoftplus:
      return x > 20.f ? x : log1pf(expf(x));
    case kHardSigmoid:
      return fminf(fmaxf(alpha * x + beta, 0.f), 1.f);
    case kHardSwish:
      return x * fminf(fmaxf(x / 6.f + 0.5f, 0.f), 1.f);
    case kExp:
      return expf(x);
    case kLog:
      return logf(x);
    case kSqrt:
      return sqrtf(x);
    case kNeg:
      return -x;
    case kAbs:
      return fabsf(x);
    case kClip:
      x = x < alpha ? alpha : x;
      return x > beta ? beta : x;
    case kErf:
      return erff(x);
    default:
      return x;  // kNoActivation
  }
}

// The binary ops by BinaryCode (launch.h).
__device__ inline float apply_binary(int code, float a, float b) {
  switch (code) {
    case kAdd:
      return a + b;
    case kSub:
      return a - b;
    case kMul:
      return a * b;
    case kDiv:
      return a / b;
    case kPow:
      return powf(a, b);
    case kMax:
      return (a != a || b != b) ? a + b : fmaxf(a, b);  // NaN propagates, as on the CPU
    default:
      return (a != a || b != b) ? a + b : fminf(a, b);
  }
}

}  // namespace lumen::cuda
