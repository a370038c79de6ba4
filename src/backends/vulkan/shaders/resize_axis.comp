// One axis of a resize (ONNX Resize, any mode: the taps come from the host,
// backends/common/resize_taps.h): y[a, o, i] = sum_k w[o, k] * x[a, index[o, k], i] over the
// axis's taps, or the extrapolation value where output o is outside the region of interest.
// taps holds per output position its indices, then its weights (float bits), then the flag.
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Taps { uint taps[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint n, in_w, out_w, inner, count, x_off, taps_off, y_off;
  float extrapolation;
} p;

void main() {
  uint e = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (e >= p.n) return;
  uint i = e % p.inner, o = (e / p.inner) % p.out_w, a = e / (p.inner * p.out_w);
  uint t = p.taps_off + o * (2u * p.count + 1u);
  float acc = 0.0;
  if (taps[t + 2u * p.count] != 0u) {
    acc = p.extrapolation;
  } else {
    uint base = p.x_off + a * p.in_w * p.inner + i;
    for (uint k = 0u; k < p.count; ++k)
      acc += uintBitsToFloat(taps[t + p.count + k]) * x[base + taps[t + k] * p.inner];
  }
  y[p.y_off + e] = acc;
}
