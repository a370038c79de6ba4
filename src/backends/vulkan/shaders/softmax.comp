// Softmax (or log-softmax) along one axis of a tensor seen as [outer, len, inner]: one
// workgroup per (outer, inner) row, reducing its max and sum (workgroup_reduce.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "workgroup_reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint rows, len, inner, x_off, y_off, log_softmax;
} p;

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.rows) return;
  uint t = gl_LocalInvocationID.x;
  uint base = (row / p.inner) * p.len * p.inner + row % p.inner;
  float m = -1.0 / 0.0;
  for (uint k = t; k < p.len; k += 256) m = combine(m, x[p.x_off + base + k * p.inner], 2u);
  m = workgroup_reduce(m, 2u);
  float sum = 0.0;
  for (uint k = t; k < p.len; k += 256) sum += exp(x[p.x_off + base + k * p.inner] - m);
  sum = workgroup_reduce(sum, 0u);
  for (uint k = t; k < p.len; k += 256) {
    float v = x[p.x_off + base + k * p.inner] - m;
    y[p.y_off + base + k * p.inner] = p.log_softmax != 0u ? v - log(sum) : exp(v) / sum;
  }
}
