// The arithmetic of grid_sample's taps that every backend shares: reflection of a coordinate into
// the input, and Keys' cubic weights (a = -0.75).
#pragma once

#include <cmath>

namespace lumen::grid_sample_taps {

// Reflects x into [lo, hi] by the near border until it is inside.
inline double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x, n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi, n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

// The weights of the four taps floor(p) - 1 .. floor(p) + 2 for the fraction t = p - floor(p).
inline void cubic_coeffs(double t, double c[4]) {
  const double a = -0.75;
  t = std::abs(t);
  c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

}  // namespace lumen::grid_sample_taps
