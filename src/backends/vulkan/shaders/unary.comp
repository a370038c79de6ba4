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

// tanh without the cancellation of (e^2x - 1) / (e^2x + 1) near 0, where drivers compute it so:
// its series below 0.1 (next term under 1e-10), the clamped formula above.
float tanh_precise(float v) {
  float a = abs(v);
  if (a < 0.1) {
    float q = v * v;
    return v * (1.0 + q * (-1.0 / 3.0 + q * (2.0 / 15.0 - q * (17.0 / 315.0))));
  }
  float e = exp(-2.0 * min(a, 15.0));
  return sign(v) * (1.0 - e) / (1.0 + e);
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
    case 3: r = tanh_precise(v); break;                                  // tanh
    case 4: r = 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752)); break;  // gelu
    case 5: r = 0.5 * v * (1.0 + tanh_precise(0.7978845608028654 * (v + 0.044715 * v * v * v)));
            break;                                                       // gelu (tanh)
    case 6: r = v * sigmoid(v); break;                                   // silu
    case 7: r = v >= 0.0 ? v : p.alpha * (exp(v) - 1.0); break;          // elu
    case 8: {                                                            // softplus
      // log1p(z) to float precision: log(u) * z / (u - 1) corrects the rounding of u = 1 + z.
      float z = exp(-abs(v)), u = 1.0 + z;
      r = max(v, 0.0) + (u == 1.0 ? z : log(u) * z / (u - 1.0));
      break;
    }
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
