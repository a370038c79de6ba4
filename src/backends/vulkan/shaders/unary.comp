// Element-wise activations and math: y[i] = f(x[i]), with alpha and beta from the attributes
// (clip: min and max).
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint n, op, x_off, y_off;
  float alpha, beta;
} p;

// erf to ~1e-7 (Abramowitz and Stegun 7.1.26 is 1.5e-7 absolute).
float erf_approx(float v) {
  float t = 1.0 / (1.0 + 0.3275911 * abs(v));
  float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 +
               t * 1.061405429))));
  float r = 1.0 - poly * exp(-v * v);
  return v < 0.0 ? -r : r;
}

float sigmoid(float v) { return v >= 0.0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v)); }

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  float v = x[p.x_off + i], r;
  switch (p.op) {
    case 0: r = max(v, 0.0); break;                                      // relu
    case 1: r = v >= 0.0 ? v : p.alpha * v; break;                       // leaky_relu
    case 2: r = sigmoid(v); break;                                       // sigmoid
    case 3: r = tanh(clamp(v, -15.0, 15.0)); break;                      // tanh
    case 4: r = 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752)); break;  // gelu
    case 5: r = 0.5 * v * (1.0 + tanh(clamp(0.7978845608028654 * (v + 0.044715 * v * v * v),
                                           -15.0, 15.0))); break;        // gelu (tanh)
    case 6: r = v * sigmoid(v); break;                                   // silu
    case 7: r = v >= 0.0 ? v : p.alpha * (exp(v) - 1.0); break;          // elu
    case 8: r = max(v, 0.0) + log(1.0 + exp(-abs(v))); break;           // softplus
    case 9: r = clamp(p.alpha * v + p.beta, 0.0, 1.0); break;            // hard_sigmoid
    case 10: r = v * clamp(v / 6.0 + 0.5, 0.0, 1.0); break;              // hard_swish
    case 11: r = exp(v); break;
    case 12: r = log(v); break;
    case 13: r = sqrt(v); break;
    case 14: r = -v; break;
    case 15: r = abs(v); break;
    default:                                                             // clip
      r = v < p.alpha ? p.alpha : v;
      r = r > p.beta ? p.beta : r;
      break;
  }
  y[p.y_off + i] = r;
}
