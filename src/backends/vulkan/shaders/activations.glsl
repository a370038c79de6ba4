// The activations and unary math that unary.comp, fused_elementwise.comp and the epilogues of
// matmul.comp and the conv shaders apply, by code: the numbering of backends/common/activation_code.h.
// alpha and beta are the activation's parameters (clip: min and max).

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

float activate(uint op, float v, float alpha, float beta) {
  // NaN stays NaN through every one of them, as on the CPU (GLSL's max, clamp and sign are
  // undefined or 0 for NaN).
  if (isnan(v)) return v;
  switch (op) {
    case 0: return max(v, 0.0);                                            // relu
    case 1: return v >= 0.0 ? v : alpha * v;                               // leaky_relu
    case 2: return sigmoid(v);
    case 3: return tanh_precise(v);
    case 4: return 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752));  // gelu
    case 5:                                                                // gelu (tanh)
      return 0.5 * v * (1.0 + tanh_precise(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case 6: return v * sigmoid(v);                                         // silu
    case 7: return v >= 0.0 ? v : alpha * (exp(v) - 1.0);                  // elu
    case 8: {                                                              // softplus
      // log1p(z) to float precision: log(u) * z / (u - 1) corrects the rounding of u = 1 + z.
      float z = exp(-abs(v)), u = 1.0 + z;
      return max(v, 0.0) + (u == 1.0 ? z : log(u) * z / (u - 1.0));
    }
    case 9: return clamp(alpha * v + beta, 0.0, 1.0);                      // hard_sigmoid
    case 10: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);                    // hard_swish
    case 11: return exp(v);
    case 12: return log(v);
    case 13: return sqrt(v);
    case 14: return -v;
    case 15: return abs(v);
    case 16: {                                                             // clip
      float r = v < alpha ? alpha : v;
      return r > beta ? beta : r;
    }
    case 17: return erf_approx(v);
    default: return v;                                                     // none
  }
}
