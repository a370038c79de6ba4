// Element-wise activations and math: y[i] = f(x[i]), f by code (activations.glsl) with alpha and
// beta from the attributes (clip: min and max).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint n, op, x_off, y_off;
  float alpha, beta;
} p;

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  y[p.y_off + i] = activate(p.op, x[p.x_off + i], p.alpha, p.beta);
}
